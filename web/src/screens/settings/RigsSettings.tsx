/** `/settings/server/rigs` (rigs.md): whether this host can run rigs, the image packs (followed live with
 * `rigs.watchPacks`: a build started here, by the first rig, shell step or command agent that needs its pack, or by
 * another process shows its step and a progress bar), the memory budget of all rigs, and custom images per
 * workspace. */
import { useState, type FormEvent } from "react";
import type { PackView } from "../../generated/ops";
import { useWatchedState } from "../../data/watch";
import { IdDetails } from "../../IdDetails";
import { engineLabel } from "../../labels";
import { ClipboardAccess } from "./ClipboardAccess";
import { DesktopImages } from "./DesktopImages";
import { Field } from "../../components/Field";
import { Outcome } from "../../components/Outcome";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";
import { fieldOf, whole } from "./fields";
import { PackFacts, PackRefresh } from "./PackFreshness";
import { wholeNumberInput } from "./WholeNumberInput";

const IMAGE_KEYS = [
  { key: "rigs.microvm.execImage", label: "Terminal image" },
  { key: "rigs.microvm.browserImage", label: `Browser image (${engineLabel("engine-a")})` },
] as const;

function HostCheck() {
  const write = useWrite();
  const status = useRead("rigs.status", {});
  const budget = useAction();
  const [draft, setDraft] = useState<string | null>(null);
  if (status.error) {
    return (
      <p className="error" role="alert">
        {status.error.message}
      </p>
    );
  }
  const s = status.data;
  if (!s) return <p aria-busy="true">Checking this host…</p>;
  const value = draft ?? String(s.memoryBudgetMb);
  const wrong = fieldOf(budget.error, ["memoryBudgetMb"]);
  const save = (e: FormEvent) => {
    e.preventDefault();
    void budget.report(async () => {
      // Sent as typed when not a whole number, so the server's refusal names the field.
      status.set(await write("rigs.setMemoryBudget", { memoryBudgetMb: whole(value) as number }));
      setDraft(null);
      return "Memory budget saved.";
    });
  };
  const used = s.memoryBudgetMb > 0 ? Math.min(100, Math.round((s.heldMb / s.memoryBudgetMb) * 100)) : 0;
  return (
    <>
      <section aria-labelledby="host-check" className="panel">
        <h2 id="host-check">Host check</h2>
        {s.unavailableReason ? (
          <p className="error" role="status">
            Rigs cannot run on this host ({s.backend} backend): {s.unavailableReason}
          </p>
        ) : (
          <p className="ok" role="status">
            Rigs can run on this host ({s.backend} backend).
          </p>
        )}
        <dl className="facts">
          <div>
            <dt>Live rigs</dt>
            <dd>{s.liveRigs}</dd>
          </div>
          <div>
            <dt>Enclosures for user code</dt>
            <dd>{s.enclosures.length}</dd>
          </div>
          <div>
            <dt>Held against the budget</dt>
            <dd>
              {s.heldMb} MB of {s.memoryBudgetMb} MB ({used}%)
            </dd>
          </div>
          <div>
            <dt>Resident memory</dt>
            <dd>{s.residentMb} MB</dd>
          </div>
        </dl>
        <button type="button" className="secondary" onClick={status.reload}>
          Check again
        </button>
      </section>
      <section aria-labelledby="memory-budget" className="panel">
        <h2 id="memory-budget">Memory budget</h2>
        <form onSubmit={save} noValidate>
          <Field
            label="Memory budget of all rigs (MB)"
            hint="Megabytes all rigs and the enclosures of shell steps and command agents may hold together: a rig counts what it holds (a parked rig still holds its memory), an enclosure its 512 MB ceiling; idle ones over it are closed, and a new one that does not fit is refused. At least 512; 12288 by default."
            error={wrong ? budget.error?.message : null}
          >
            {wholeNumberInput({ value, onChange: setDraft, invalid: wrong !== null, min: 512, step: 256 })}
          </Field>
          <button type="submit" disabled={budget.busy}>
            Save budget
          </button>
        </form>
        <Outcome action={budget} fieldShown={wrong !== null} />
      </section>
    </>
  );
}

/** A pack by the name a person reads ("Chromium browser image"); its cache name and revision are its details. */
function PackRow({ pack, onBuild, busy }: { pack: PackView; onBuild(name: string): void; busy: boolean }) {
  const label = pack.label || pack.name;
  return (
    <li className="pack">
      <div>
        <strong>{label}</strong>
        <IdDetails
          label="Details"
          items={[
            ["Pack", pack.name],
            ["Revision", pack.revision],
            ...(pack.engine ? [["Engine", pack.engine] as const] : []),
          ]}
        />
      </div>
      {pack.state === "ready" && <span className="badge ok">ready</span>}
      {pack.state === "ready" && <PackFacts pack={pack} />}
      {pack.state === "missing" && <span className="badge">not built</span>}
      {pack.state === "failed" && <span className="badge bad">build failed</span>}
      {pack.state === "building" && (
        <div className="progress">
          <progress
            aria-label={`Building ${label}`}
            max={pack.steps || undefined}
            value={pack.steps ? pack.stepIndex : undefined}
          />
          <span role="status">{pack.step ?? "starting…"}</span>
        </div>
      )}
      {pack.error && (
        <p className="error" role="alert">
          {pack.error}
        </p>
      )}
      {(pack.state === "missing" || pack.state === "failed") && (
        <button type="button" disabled={busy} onClick={() => onBuild(pack.name)}>
          {pack.state === "failed" ? `Build ${label} again` : `Build ${label}`}
        </button>
      )}
    </li>
  );
}

/** The packs as `rigs.watchPacks` tells them: the list, then the whole list again at every change. */
function usePacks() {
  return useWatchedState("rigs.watchPacks", {}, (list) => list);
}

function Packs() {
  const write = useWrite();
  const packs = usePacks();
  const build = useAction();
  const start = (name: string) => {
    void build.report(async () => {
      const listed = await write("rigs.buildPack", { name });
      if (packs.data) packs.set({ ...packs.data, packs: listed });
      return null;
    });
  };
  return (
    <section aria-labelledby="packs" className="panel">
      <h2 id="packs">Image packs</h2>
      <p className="hint">
        Rigs boot from packs built once and cached on this host. A build takes a few minutes; the first rig builds
        its pack itself if it is missing.
      </p>
      {packs.error && (
        <p className="error" role="alert">
          {packs.error.message}
        </p>
      )}
      {packs.data &&
        (packs.data.packs.length === 0 ? (
          <p>This host&apos;s backend boots without packs.</p>
        ) : (
          <ul className="list" aria-label="Image packs">
            {packs.data.packs.map((p) => (
              <PackRow key={p.name} pack={p} onBuild={start} busy={build.busy} />
            ))}
          </ul>
        ))}
      <Outcome action={build} />
      {packs.data && packs.data.packs.length > 0 && <PackRefresh list={packs.data} onList={packs.set} />}
    </section>
  );
}

function WorkspaceImages({ workspaceId }: { workspaceId: string }) {
  const write = useWrite();
  const settings = useRead("settings.get", { workspace_id: workspaceId });
  const [drafts, setDrafts] = useState<Record<string, string>>({});
  const [savingKey, setSavingKey] = useState<string | null>(null);
  const action = useAction();
  if (settings.error) {
    return (
      <p className="error" role="alert">
        {settings.error.message}
      </p>
    );
  }
  if (!settings.data) return <p aria-busy="true">Loading this workspace&apos;s settings…</p>;
  const data = settings.data;
  const stored = (key: string) => {
    const value = data[key]?.value;
    return typeof value === "string" ? value : "";
  };
  const save = (key: string) => (e: FormEvent) => {
    e.preventDefault();
    setSavingKey(key);
    const typed = (drafts[key] ?? stored(key)).trim();
    void action.report(async () => {
      await write("settings.set", { workspace_id: workspaceId, key, value: typed === "" ? null : typed });
      setDrafts(({ [key]: _, ...rest }) => rest);
      return typed === "" ? "Restored the default image." : "Image saved; rigs opened from now on boot it.";
    });
  };
  return (
    <>
      {IMAGE_KEYS.map(({ key, label }) => (
        <form key={key} onSubmit={save(key)} noValidate className="image-form">
          <Field
            label={label}
            hint={`${data[key]?.summary ?? key} Blank restores the default image.`}
            error={savingKey === key && action.error ? action.error.message : null}
          >
            {(id, describedBy) => (
              <input
                id={id}
                className="mono"
                placeholder="registry.example.com/team/image:tag"
                value={drafts[key] ?? stored(key)}
                aria-describedby={describedBy}
                aria-invalid={(savingKey === key && action.error !== null) || undefined}
                onChange={(e) => setDrafts({ ...drafts, [key]: e.target.value })}
              />
            )}
          </Field>
          <button type="submit" className="secondary" disabled={action.busy}>
            Save {label.toLowerCase()}
          </button>
        </form>
      ))}
      <p className="saved" role="status">
        {action.done}
      </p>
    </>
  );
}

function CustomImages() {
  const workspaces = useRead("workspaces.list", {});
  const admin = (workspaces.data ?? []).filter((w) => w.role === "admin" || w.role === "owner");
  const [chosen, setChosen] = useState<string | null>(null);
  const workspaceId = chosen ?? admin[0]?.id ?? null;
  return (
    <section aria-labelledby="custom-images" className="panel">
      <h2 id="custom-images">Custom images for a workspace</h2>
      <p className="hint">
        A registry reference such as <code>ghcr.io/team/image:tag</code>; local paths, archives and flag-like values
        are refused. Workspaces you administer are listed.
      </p>
      {workspaces.error && (
        <p className="error" role="alert">
          {workspaces.error.message}
        </p>
      )}
      {workspaces.data && admin.length === 0 && <p>You administer no workspace on this server.</p>}
      {workspaceId && (
        <>
          <Field label="Workspace">
            {(id) => (
              <select id={id} value={workspaceId} onChange={(e) => setChosen(e.target.value)}>
                {admin.map((w) => (
                  <option key={w.id} value={w.id}>
                    {w.name}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <WorkspaceImages key={workspaceId} workspaceId={workspaceId} />
        </>
      )}
    </section>
  );
}

export function RigsSettings({ selfId }: { selfId: string }) {
  return (
    <>
      <HostCheck />
      <Packs />
      <CustomImages />
      <DesktopImages />
      <ClipboardAccess selfId={selfId} serverOwner />
    </>
  );
}
