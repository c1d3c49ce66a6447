/** How current each image pack is (issue: packs stay current): when its current version was built and how old it
 * is, the archive release it was built from, and how its last check against the archive went (a rebuild under way
 * shows its step; the pack in place keeps serving until the new one is ready); and, for the server owner, how
 * often packs are checked (`rigs.setPackRefresh`, 0: never) and a check now (`rigs.checkPacks`). */
import { useState, type FormEvent } from "react";
import type { PackList, PackView } from "../../generated/ops";
import { Field } from "../../components/Field";
import { Outcome } from "../../components/Outcome";
import { when } from "../../components/time";
import { useAction, useWrite } from "../../data/mutations";
import { fieldOf, whole } from "./fields";
import { wholeNumberInput } from "./WholeNumberInput";

/** "3 days", "5 hours", "under an hour": how long ago an instant was, for a pack's age. */
export function age(iso: string | null | undefined, now: number = Date.now()): string {
  if (!iso) return "unknown";
  const hours = Math.floor((now - new Date(iso).getTime()) / 3_600_000);
  if (Number.isNaN(hours)) return "unknown";
  if (hours < 1) return "under an hour";
  if (hours < 48) return `${hours} hour${hours === 1 ? "" : "s"}`;
  return `${Math.floor(hours / 24)} days`;
}

const STATES: Record<string, string> = {
  current: "up to date",
  refreshing: "being rebuilt",
  refreshed: "rebuilt",
  failed: "failed",
};

/** The freshness facts of one ready pack. */
export function PackFacts({ pack }: { pack: PackView }) {
  const refresh = pack.refresh;
  const rebuilding = pack.state === "ready" && pack.step !== null;
  return (
    <div className="pack-facts">
      <dl className="facts">
        <div>
          <dt>Built</dt>
          <dd>
            {when(pack.builtAt)} ({age(pack.builtAt)} ago)
          </dd>
        </div>
        <div>
          <dt>Archive release</dt>
          <dd>{pack.archiveDate ? when(pack.archiveDate) : "unknown (checked at the next pass)"}</dd>
        </div>
        <div>
          <dt>Last check</dt>
          <dd>{when(refresh?.checkedAt)}</dd>
        </div>
        <div>
          <dt>Refresh</dt>
          <dd>
            {refresh ? STATES[refresh.state] : "not checked yet"}
            {refresh?.state === "refreshed" && ` ${when(refresh.finishedAt)}`}
            {refresh &&
              refresh.newer.length > 0 &&
              refresh.state !== "current" &&
              ` (${refresh.newer.join(", ")} released since)`}
          </dd>
        </div>
      </dl>
      {rebuilding && (
        <div className="progress">
          <progress
            aria-label={`Rebuilding ${pack.label || pack.name}`}
            max={pack.steps || undefined}
            value={pack.steps ? pack.stepIndex : undefined}
          />
          <span role="status">{pack.step} (the current pack serves until the new one is ready)</span>
        </div>
      )}
      {refresh?.state === "failed" && refresh.error && (
        <p className="error" role="alert">
          The pack in place keeps serving: {refresh.error}
        </p>
      )}
    </div>
  );
}

/** How often packs are checked against their archives, and a check now. */
export function PackRefresh({ list, onList }: { list: PackList; onList(list: PackList): void }) {
  const write = useWrite();
  const save = useAction();
  const check = useAction();
  const [draft, setDraft] = useState<string | null>(null);
  const value = draft ?? String(list.refreshHours);
  const wrong = fieldOf(save.error, ["hours"]);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void save.report(async () => {
      // Sent as typed when not a whole number, so the server's refusal names the field.
      const saved = await write("rigs.setPackRefresh", { hours: whole(value) as number });
      onList(saved);
      setDraft(null);
      return saved.refreshHours === 0 ? "Packs are no longer checked." : "Check interval saved.";
    });
  };
  const checkNow = () => {
    void check.report(async () => {
      const checked = await write("rigs.checkPacks", {});
      onList(checked);
      const rebuilding = checked.packs.filter((p) => p.refresh?.state === "refreshing").length;
      return rebuilding > 0 ? `Packs checked; ${rebuilding} being rebuilt.` : "Packs checked.";
    });
  };
  return (
    <div className="pack-refresh">
      <h3>Keeping packs current</h3>
      <p className="hint">
        Each pack is compared with the release date of the Debian archive it was built from. One older than its
        archive&apos;s latest (security) release is rebuilt in the background; the pack in place serves new rigs until
        the new one is ready, running rigs keep theirs, and an old pack is removed once no rig uses it.
      </p>
      <form onSubmit={submit} noValidate>
        <Field
          label="Check packs every (hours)"
          hint="0 turns checking off; at most 8760. 24 by default."
          error={wrong ? save.error?.message : null}
        >
          {wholeNumberInput({ value, onChange: setDraft, invalid: wrong !== null, min: 0, max: 8760 })}
        </Field>
        <button type="submit" disabled={save.busy}>
          Save interval
        </button>
      </form>
      <Outcome action={save} fieldShown={wrong !== null} />
      <button type="button" className="secondary" disabled={check.busy} onClick={checkNow}>
        Check packs now
      </button>
      <Outcome action={check} />
    </div>
  );
}
