/** Files dropped (or chosen) onto a rig travel over its file lane (`POST /rig/files/<rigId>`, a URL minted by
 * `rig.fileLaneUrl`, with the device credential as a bearer), not the RPC socket; they land in the rig's drops
 * folder (`~/drops` in a terminal, `/tmp/hangar-drops` in a browser). */
import { useRef, useState, type DragEvent } from "react";
import { useAction, useWrite } from "../../../data/mutations";
import { dropFiles, type Landed } from "./fileLane";

export function FileDrop({
  workspaceId,
  rigId,
  disabled,
  folder = "~/drops",
}: {
  workspaceId: string;
  rigId: string;
  disabled: boolean;
  folder?: string;
}) {
  const write = useWrite();
  const picker = useRef<HTMLInputElement>(null);
  const [over, setOver] = useState(false);
  const action = useAction();
  const [landed, setLanded] = useState<Landed[]>([]);
  const state = { busy: action.busy, landed, error: action.error?.message ?? null };

  const send = async (files: File[]) => {
    if (files.length === 0 || disabled) return;
    setLanded([]);
    const reply = await action.run(() => dropFiles(write, workspaceId, rigId, files));
    if (reply) setLanded(reply.files);
  };
  const drop = (e: DragEvent<HTMLDivElement>) => {
    e.preventDefault();
    setOver(false);
    void send([...e.dataTransfer.files]);
  };

  return (
    <div
      className="drop"
      data-over={over}
      onDragOver={(e) => {
        e.preventDefault();
        setOver(true);
      }}
      onDragLeave={() => setOver(false)}
      onDrop={drop}
    >
      <p>
        Drop files here to put them in the rig's <code>{folder}</code> folder, or
      </p>
      <button
        type="button"
        className="secondary small"
        disabled={disabled || state.busy}
        onClick={() => picker.current?.click()}
      >
        Choose files…
      </button>
      <input
        ref={picker}
        hidden
        aria-label="Files to send to the rig"
        type="file"
        multiple
        disabled={disabled || state.busy}
        onChange={(e) => {
          void send([...(e.target.files ?? [])]);
          e.target.value = "";
        }}
      />
      {state.busy && (
        <p role="status">
          <progress aria-label="Sending files" /> Sending…
        </p>
      )}
      {state.landed.length > 0 && (
        <ul className="landed" aria-label="Files that landed">
          {state.landed.map((f) => (
            <li key={f.path}>
              <code>{f.path}</code> ({f.size} bytes)
            </li>
          ))}
        </ul>
      )}
      {state.error && (
        <p className="error" role="alert">
          {state.error}
        </p>
      )}
    </div>
  );
}
