/** The desktop images of full-VM computer rigs, on `/settings/server/rigs`: those imported (`rigs.images`) and
 * the form that imports one (`rigs.importImage`): a file on the server's host or a URL, with its SHA-256; the
 * server checks the checksum, the qcow2 header and that the image boots to an answering guest agent before it is
 * listed, and its refusal is shown at the field it names. */
import { useState, type FormEvent } from "react";
import { Field } from "../../components/Field";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";
import { fieldOf } from "./fields";

const FIELDS = ["source", "sha256", "name", "backend"] as const;
const mebibytes = (bytes: number) => Math.round(bytes / 2 ** 20);

export function DesktopImages() {
  const write = useWrite();
  const images = useRead("rigs.images", {});
  const action = useAction();
  const [source, setSource] = useState("");
  const [sha256, setSha256] = useState("");
  const [name, setName] = useState("");
  const [backend, setBackend] = useState<"fullvm-kvm" | "fullvm-tcg">("fullvm-kvm");
  const wrong = fieldOf(action.error, FIELDS);
  const errorAt = (field: string) => (wrong === field ? (action.error?.message ?? null) : null);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void action.report(async () => {
      const done = await write("rigs.importImage", { source: source.trim(), sha256: sha256.trim(), name, backend });
      images.set([done, ...(images.data ?? [])]);
      setSource("");
      setSha256("");
      setName("");
      return `Imported ${done.name} (${done.imageId}); its guest agent answered after ${done.bootSeconds} s.`;
    });
  };
  return (
    <section aria-labelledby="desktop-images" className="panel">
      <h2 id="desktop-images">Desktop images for full VMs</h2>
      <p className="hint">
        A qcow2 desktop with the guest agent, such as the one <code>scripts/build-desktop-image</code> builds. It is
        checked before it is offered: its SHA-256, its header (qcow2, no backing file) and a boot until its guest agent
        answers, which takes minutes without KVM.
      </p>
      {images.error && (
        <p className="error" role="alert">
          {images.error.message}
        </p>
      )}
      {images.data && images.data.length === 0 && <p>No desktop image is imported yet.</p>}
      {images.data && images.data.length > 0 && (
        <ul aria-label="Desktop images" className="plain">
          {images.data.map((image) => (
            <li key={image.imageId}>
              <strong>{image.name}</strong> <code>{image.imageId}</code>, {mebibytes(image.virtualBytes)} MiB disk,
              checked under {image.accelerator} in {image.bootSeconds} s
            </li>
          ))}
        </ul>
      )}
      <form onSubmit={submit} noValidate aria-label="Import a desktop image">
        <Field
          label="Image file or URL"
          hint="An absolute path on the server's host, or an http(s) URL."
          error={errorAt("source")}
        >
          {(id, describedBy) => (
            <input
              id={id}
              className="mono"
              value={source}
              aria-describedby={describedBy}
              aria-invalid={wrong === "source" || undefined}
              onChange={(e) => setSource(e.target.value)}
            />
          )}
        </Field>
        <Field label="SHA-256" hint="64 hexadecimal digits; required." error={errorAt("sha256")}>
          {(id, describedBy) => (
            <input
              id={id}
              className="mono"
              value={sha256}
              aria-describedby={describedBy}
              aria-invalid={wrong === "sha256" || undefined}
              onChange={(e) => setSha256(e.target.value)}
            />
          )}
        </Field>
        <Field label="Name" error={errorAt("name")}>
          {(id, describedBy) => (
            <input id={id} value={name} aria-describedby={describedBy} onChange={(e) => setName(e.target.value)} />
          )}
        </Field>
        <Field label="Check it under" hint="TCG needs no KVM but is much slower; it is never chosen for you.">
          {(id, describedBy) => (
            <select
              id={id}
              value={backend}
              aria-describedby={describedBy}
              onChange={(e) => setBackend(e.target.value as "fullvm-kvm" | "fullvm-tcg")}
            >
              <option value="fullvm-kvm">KVM (fullvm-kvm)</option>
              <option value="fullvm-tcg">TCG emulation (fullvm-tcg)</option>
            </select>
          )}
        </Field>
        <button type="submit" disabled={action.busy}>
          {action.busy ? "Checking the image…" : "Import image"}
        </button>
        {action.error && !wrong && (
          <p className="error" role="alert">
            {action.error.message}
          </p>
        )}
        <p className="saved" role="status">
          {action.done}
        </p>
      </form>
    </section>
  );
}
