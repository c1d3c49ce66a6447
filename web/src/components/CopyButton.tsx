import { useState } from "react";

/** Copies `text`; says whether it worked (the clipboard API is absent outside secure contexts). */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [said, setSaid] = useState<string | null>(null);
  const copy = () => {
    const clipboard = typeof navigator !== "undefined" ? navigator.clipboard : undefined;
    if (!clipboard) {
      setSaid("Copying needs a secure page (https); select the text and copy it instead.");
      return;
    }
    clipboard.writeText(text).then(
      () => setSaid("Copied."),
      () => setSaid("The browser refused to copy; select the text and copy it instead."),
    );
  };
  return (
    <span className="copy">
      <button type="button" className="secondary" onClick={copy}>
        {label}
      </button>
      <span role="status">{said}</span>
    </span>
  );
}
