/** Files dropped onto a live view (a browser rig's page, a computer rig's desktop): they travel over the file lane
 * (`dropFiles`) and the server's reply says where they landed and how the rig was told (`delivery`). Shared by
 * `LiveView` and `DesktopView`, which differ only in the drop point they send and the words for each delivery. */
import { useState, type DragEvent } from "react";
import { useWrite } from "../../../data/mutations";
import { dropFiles, type DropReply } from "./fileLane";

/** The props that make a box take file drops. */
export interface DropZone {
  "data-over": boolean;
  onDragOver: (e: DragEvent<HTMLDivElement>) => void;
  onDragLeave: () => void;
  onDrop: (e: DragEvent<HTMLDivElement>) => void;
}

export interface ViewDrop {
  busy: boolean;
  reply: DropReply | null;
  error: string | null;
}

export function useViewDrop(
  workspaceId: string,
  rigId: string,
  /** The drop point the rig is told (a browser page's CSS pixels), or undefined when it takes none. */
  where: (e: DragEvent<HTMLDivElement>) => { x: number; y: number } | undefined,
): { zone: DropZone; drop: ViewDrop } {
  const write = useWrite();
  const [over, setOver] = useState(false);
  const [drop, setDrop] = useState<ViewDrop>({ busy: false, reply: null, error: null });
  const zone: DropZone = {
    "data-over": over,
    onDragOver: (e: DragEvent<HTMLDivElement>) => {
      e.preventDefault();
      setOver(true);
    },
    onDragLeave: () => setOver(false),
    onDrop: (e: DragEvent<HTMLDivElement>) => {
      e.preventDefault();
      setOver(false);
      const files = [...e.dataTransfer.files];
      if (files.length === 0) return;
      setDrop({ busy: true, reply: null, error: null });
      dropFiles(write, workspaceId, rigId, files, where(e)).then(
        (reply) => setDrop({ busy: false, reply, error: null }),
        (err: unknown) =>
          setDrop({ busy: false, reply: null, error: err instanceof Error ? err.message : String(err) }),
      );
    },
  };
  return { zone, drop };
}

export function DropOutcome({
  drop,
  target,
  delivery,
}: {
  drop: ViewDrop;
  /** What the files are dropped onto, for the progress bar's name ("the page", "the desktop"). */
  target: string;
  delivery: Partial<Record<DropReply["delivery"], string>>;
}) {
  return (
    <>
      {drop.busy && (
        <p role="status">
          <progress aria-label={`Dropping files onto ${target}`} /> Dropping…
        </p>
      )}
      {drop.reply && (
        <div className="drop-reply" role="status">
          <p>{delivery[drop.reply.delivery] ?? drop.reply.note ?? "The files landed in the rig."}</p>
          <ul className="landed" aria-label="Files that landed">
            {drop.reply.files.map((f) => (
              <li key={f.path}>
                <code>{f.path}</code> ({f.size} bytes)
              </li>
            ))}
          </ul>
        </div>
      )}
      {drop.error && (
        <p className="error" role="alert">
          {drop.error}
        </p>
      )}
    </>
  );
}
