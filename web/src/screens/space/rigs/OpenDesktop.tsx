/** **Open a desktop**: a computer rig in the enclosure (the default) or in a full VM, with the image for the VM
 * where the person may list them (the server owner). The server's refusal (KVM unusable here, with the probe's
 * reason; no image imported) is shown by the caller, inline beside the buttons. */
import { useState } from "react";
import { useRead } from "../../../data/queries";
import { RunsInChoice } from "./RunsInChoice";
import { desktopArgs, type DesktopArgs, type RunsIn } from "./runsIn";

interface Props {
  busy: boolean;
  onOpen(extra: DesktopArgs): void;
}

export function OpenDesktop({ busy, onOpen }: Props) {
  const [runsIn, setRunsIn] = useState<RunsIn>("enclosure");
  const [imageId, setImageId] = useState("");
  const me = useRead("users.me", {});
  const owner = me.data?.isServerOwner === true;
  // Read only when it can matter: a VM is chosen and this person is the one who may list images.
  const images = useRead("rigs.images", {}, { enabled: owner && runsIn !== "enclosure" });
  return (
    <form
      className="open-desktop"
      onSubmit={(e) => {
        e.preventDefault();
        onOpen(desktopArgs(runsIn, imageId));
      }}
    >
      <RunsInChoice
        runsIn={runsIn}
        onRunsIn={(value) => {
          setRunsIn(value);
          setImageId("");
        }}
        imageId={imageId}
        onImage={setImageId}
        images={owner ? (images.data ?? null) : null}
        disabled={busy}
      />
      <button type="submit" className="secondary small" disabled={busy}>
        Open a desktop
      </button>
    </form>
  );
}
