/** The picture of a live view (a browser rig's page, a computer rig's desktop): the canvas `useLiveCanvas` draws
 * on and takes input from, in its box, which takes file drops (`useViewDrop`), with a hint until the first frame.
 * Named for what it shows, so a screen reader says whose picture it is and whether keys go to it. */
import type { LiveCanvas } from "./useLiveCanvas";
import type { DropZone } from "./viewDrop";

export function LiveScreen({ live, zone, what }: { live: LiveCanvas; zone: DropZone; what: "page" | "desktop" }) {
  const { canvas, box, state, inControl, hasFrame } = live;
  return (
    <div className="live-box" ref={box} {...zone}>
      {!hasFrame && state !== "closed" && <p className="hint">Waiting for the first picture of the {what}…</p>}
      <canvas
        ref={canvas}
        className="live-canvas"
        role="img"
        aria-label={
          inControl
            ? `The rig's ${what}: you have control (keys and mouse go to the ${what})`
            : `The rig's ${what}, live`
        }
        tabIndex={0}
        data-control={inControl}
        {...live.handlers}
      />
    </div>
  );
}
