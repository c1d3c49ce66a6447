/** The "Runs in" choice of **Open a desktop**: the enclosure or a full VM, and for a VM the image to boot. Only the
 * server owner may list images (`rigs.images` is theirs): `images` is null for anyone else, and the server then
 * boots the newest image imported for the backend, which the choice says. */
import { useId } from "react";
import type { ImageView } from "../../../generated/ops";
import { imageLabel, imagesFor, RUNS_IN, runsInLabel, type RunsIn } from "./runsIn";

interface Props {
  runsIn: RunsIn;
  onRunsIn(value: RunsIn): void;
  /** The picked image's id, "" for the newest imported. */
  imageId: string;
  onImage(imageId: string): void;
  /** The imported images, or null where this person may not list them (not the server owner). */
  images: readonly ImageView[] | null;
  disabled: boolean;
}

export function RunsInChoice({ runsIn, onRunsIn, imageId, onImage, images, disabled }: Props) {
  const vm = runsIn !== "enclosure";
  const fitting = images ? imagesFor(images, runsIn) : [];
  // Labels by id, not wrapping: a wrapped select would lend its chosen option to the label's name.
  const id = useId();
  return (
    <>
      <label htmlFor={`${id}-runs-in`}>Runs in</label>
      <select
        id={`${id}-runs-in`}
        value={runsIn}
        onChange={(e) => onRunsIn(e.target.value as RunsIn)}
        disabled={disabled}
      >
        {RUNS_IN.map((r) => (
          <option key={r.value} value={r.value}>
            {r.label}
          </option>
        ))}
      </select>
      {vm && images !== null && fitting.length > 0 && (
        <>
          <label htmlFor={`${id}-image`}>Image</label>
          <select id={`${id}-image`} value={imageId} onChange={(e) => onImage(e.target.value)} disabled={disabled}>
            <option value="">The newest imported</option>
            {fitting.map((i) => (
              <option key={i.imageId} value={i.imageId}>
                {imageLabel(i)}
              </option>
            ))}
          </select>
        </>
      )}
      {vm && images !== null && fitting.length === 0 && (
        <p className="hint">
          No image is imported for {runsInLabel(runsIn)} yet: import one in Server settings, Rigs.
        </p>
      )}
      {vm && images === null && (
        <p className="hint">The server boots the newest image the server owner imported for {runsInLabel(runsIn)}.</p>
      )}
    </>
  );
}
