/** The rig's clipboard (the clipboard lane, `/rig/clipboard/<rigId>`): paste text or an image from this computer
 * into the rig, and copy the rig's clipboard (its text, or its image) out. Copying out needs the person's consent
 * (rigs.md): the lane answers `consent_required` until they allow it for ten minutes here, or always under
 * Settings, Server, Rigs, Clipboard access. A browser rig's clipboard is its page's, which exists only on secure
 * pages; the server says so when a paste was not applied (engine B's clipboard takes no images), and what it
 * changed when it was (a JPEG kept as PNG). */
import { useEffect, useRef, useState, type ClipboardEvent } from "react";
import { Link } from "../../../Link";
import { useAction, useWrite } from "../../../data/mutations";
import { callLane, LaneError } from "./fileLane";

const MAX_IMAGE = 16 * 1024 * 1024;

interface CopiedImage {
  mime: "image/png" | "image/jpeg";
  base64: string;
  bytes: number;
  width: number | null;
  height: number | null;
}

interface Copied {
  available: boolean;
  text: string | null;
  image: CopiedImage | null;
  note: string | null;
}

function imageBlob(image: CopiedImage): Blob {
  const raw = atob(image.base64);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  return new Blob([bytes], { type: image.mime });
}

function describe(image: CopiedImage): string {
  const kind = image.mime === "image/png" ? "PNG" : "JPEG";
  const size = image.width && image.height ? `${image.width}x${image.height} ` : "";
  return `${size}${kind} image, ${image.bytes} bytes`;
}

/** The copied image, drawn on a canvas (the client's content security policy allows images from its own origin
 * only, so neither a data: nor a blob: URL can be an <img>), with a copy button and a save link. */
function CopiedPicture({ image, onCopy }: { image: CopiedImage; onCopy: () => void }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [saveUrl, setSaveUrl] = useState<string | null>(null);
  const [broken, setBroken] = useState(false);
  useEffect(() => {
    const blob = imageBlob(image);
    const url = URL.createObjectURL(blob);
    setSaveUrl(url);
    setBroken(false);
    let gone = false;
    createImageBitmap(blob).then(
      (bitmap) => {
        const target = canvas.current;
        if (gone || !target) return;
        target.width = bitmap.width;
        target.height = bitmap.height;
        target.getContext("2d")?.drawImage(bitmap, 0, 0);
      },
      () => setBroken(true),
    );
    return () => {
      gone = true;
      URL.revokeObjectURL(url);
    };
  }, [image]);
  const label = `The rig's clipboard: ${describe(image)}`;
  return (
    <figure className="copied-image">
      <canvas ref={canvas} role="img" aria-label={label} />
      <figcaption>
        {describe(image)}
        {broken && " (this browser cannot show it)"}
      </figcaption>
      <div className="clipboard-actions">
        <button type="button" className="secondary small" onClick={onCopy}>
          Copy the image to my clipboard
        </button>
        {saveUrl && (
          <a href={saveUrl} download={`rig-clipboard.${image.mime === "image/png" ? "png" : "jpg"}`}>
            Save the image
          </a>
        )}
      </div>
    </figure>
  );
}

interface Props {
  workspaceId: string;
  rigId: string;
  disabled: boolean;
}

export function ClipboardPanel({ workspaceId, rigId, disabled }: Props) {
  const write = useWrite();
  const [text, setText] = useState("");
  const [image, setImage] = useState<File | null>(null);
  const action = useAction();
  const { busy } = action;
  const [said, setSaid] = useState<string | null>(null);
  // Refused here before anything is sent (an image over the lane's limit); the rest is the action's refusal.
  const [problem, setProblem] = useState<string | null>(null);
  const error = problem ?? action.error?.message ?? null;
  const [consent, setConsent] = useState<string | null>(null);
  const [copied, setCopied] = useState<Copied | null>(null);

  const run = async (work: () => Promise<void>) => {
    setProblem(null);
    setSaid(null);
    await action.run(async () => {
      try {
        await work();
      } catch (e) {
        // Consent asked for is a question to the person, not a refusal.
        if (e instanceof LaneError && e.code === "consent_required") setConsent(e.message);
        else throw e;
      }
    });
  };

  const onPaste = (e: ClipboardEvent<HTMLTextAreaElement>) => {
    const file = [...e.clipboardData.files].find((f) => f.type === "image/png" || f.type === "image/jpeg");
    if (!file) return; // text pastes into the box as usual
    e.preventDefault();
    if (file.size > MAX_IMAGE) {
      setProblem("That image is over 16 MB, the clipboard lane's limit.");
      return;
    }
    setImage(file);
  };

  const paste = () =>
    run(async () => {
      const init: RequestInit = image
        ? { method: "POST", body: image, headers: { "Content-Type": image.type } }
        : { method: "POST", body: text, headers: { "Content-Type": "text/plain; charset=utf-8" } };
      const response = await callLane(write, workspaceId, rigId, "clipboard", init);
      const reply = (await response.json()) as { applied?: boolean; reason?: string | null; note?: string | null };
      const note = reply.note ? ` (${reply.note})` : "";
      setSaid(
        reply.applied
          ? image
            ? `The image is on the rig's clipboard${note}.`
            : "The text is on the rig's clipboard."
          : `Not pasted: ${reply.reason ?? "the rig did not take it"}.`,
      );
      if (reply.applied) {
        setText("");
        setImage(null);
      }
    });

  const copy = () =>
    run(async () => {
      // Asked first through the socket, so a copy without consent is not a refused request (the lane would
      // answer 403 consent_required all the same).
      const policy = await write("rig.clipboardGrants", {});
      const granted = policy.grants.some((g) => g.direction === "rigToHost");
      if (policy.defaults["rigToHost"] !== "allow" && !granted) {
        setConsent("Copying from the rig to your computer needs your consent.");
        return;
      }
      const response = await callLane(write, workspaceId, rigId, "clipboard");
      setConsent(null);
      setCopied((await response.json()) as Copied);
    });

  const allow = () =>
    run(async () => {
      await write("rig.clipboardGrant", { direction: "rigToHost", minutes: 10 });
      setConsent(null);
      const response = await callLane(write, workspaceId, rigId, "clipboard");
      setCopied((await response.json()) as Copied);
    });

  const toMine = () => {
    if (!copied?.text) return;
    if (!navigator.clipboard) {
      setSaid("This page cannot write your clipboard (it needs https); select the text and copy it.");
      return;
    }
    navigator.clipboard.writeText(copied.text).then(
      () => setSaid("Copied to your clipboard."),
      () => setSaid("The browser refused; select the text and copy it."),
    );
  };

  const imageToMine = () => {
    const picture = copied?.image;
    if (!picture) return;
    if (!navigator.clipboard || typeof ClipboardItem === "undefined") {
      setSaid("This page cannot put images on your clipboard (it needs https); save the image instead.");
      return;
    }
    const blob = imageBlob(picture);
    navigator.clipboard.write([new ClipboardItem({ [blob.type]: blob })]).then(
      () => setSaid("The image is on your clipboard."),
      () => setSaid("The browser refused; save the image instead."),
    );
  };

  return (
    <div className="clipboard">
      <label htmlFor={`paste-${rigId}`}>Paste into the rig (type or paste text, or paste a PNG or JPEG image)</label>
      <textarea
        id={`paste-${rigId}`}
        rows={2}
        value={text}
        disabled={disabled || busy}
        onChange={(e) => setText(e.target.value)}
        onPaste={onPaste}
      />
      {image && (
        <p>
          Image ready: {image.type}, {image.size} bytes{" "}
          <button type="button" className="secondary small" onClick={() => setImage(null)}>
            Discard the image
          </button>
        </p>
      )}
      <div className="clipboard-actions">
        <button
          type="button"
          className="small"
          disabled={disabled || busy || (!image && text === "")}
          onClick={() => void paste()}
        >
          Paste into the rig
        </button>
        <button type="button" className="secondary small" disabled={disabled || busy} onClick={() => void copy()}>
          Copy from the rig
        </button>
      </div>
      {busy && <progress aria-label="Working with the rig's clipboard" />}
      {consent && (
        <div className="consent" role="alert">
          <p>Copying from the rig to your computer needs your consent.</p>
          <button type="button" className="small" disabled={busy} onClick={() => void allow()}>
            Allow for ten minutes
          </button>
          <p className="hint">
            To always allow it, go to{" "}
            <Link href="/settings/server/rigs">Settings, Server, Rigs, Clipboard access</Link>.
          </p>
        </div>
      )}
      {copied && (
        <div className="copied">
          {copied.image ? (
            <CopiedPicture image={copied.image} onCopy={imageToMine} />
          ) : copied.available ? (
            <>
              <label htmlFor={`copied-${rigId}`}>The rig's clipboard</label>
              <textarea id={`copied-${rigId}`} rows={2} readOnly value={copied.text ?? ""} />
              <button type="button" className="secondary small" disabled={!copied.text} onClick={toMine}>
                Copy to my clipboard
              </button>
            </>
          ) : (
            <p className="notice">{copied.note ?? "The rig's clipboard is not available."}</p>
          )}
        </div>
      )}
      <p role="status">{said}</p>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}
