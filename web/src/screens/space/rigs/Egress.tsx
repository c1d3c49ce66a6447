/** What a rig could not reach, told where the rig is shown: its egress gate refused a connection, and a program in
 * it only says "Could not resolve host". Each notice names the host and the rule that refused it (from `rig.watch`:
 * the rig's status lists the latest, an `egress` event tells each new one). A host off the allowlist can be let
 * through by a workspace admin (`rig.grantHosts`): admins get a link to this rig's "Hosts this rig may reach"
 * form with the host filled in; others are told to ask one. */
import { useEffect, useRef, useState, type FormEvent } from "react";
import type { EgressRefusal } from "../../../generated/ops";
import { Link } from "../../../Link";
import { rigPath, useLocation } from "../../../router";
import { useAction, useWrite } from "../../../data/mutations";
import "./rigs.css";

const RULES: Record<EgressRefusal["rule"], string> = {
  allowlist: "it is not on this rig's allowlist",
  address: "it resolves only to addresses rigs may not reach (this host, loopback, link-local or private ones)",
  port: "only ports 80 and 443 leave a rig",
  direct: "the connection went around the rig's egress gate (straight to an address)",
  protocol: "the request named no host the gate could check",
  limit: "the rig holds too many connections at once",
  unreachable: "the host did not answer",
  server: "the rig's door to this server passes only its MCP endpoint",
};

/** The link an admin follows to let the rig reach `host`: this rig's page, its grant form filled in. */
export function grantHref(workspaceId: string, rigId: string, host: string): string {
  return `${rigPath(workspaceId, rigId)}?grant=${encodeURIComponent(host)}`;
}

interface NoticesProps {
  workspaceId: string;
  rigId: string;
  refusals: EgressRefusal[];
  admin: boolean;
  onDismiss(): void;
}

export function EgressNotices({ workspaceId, rigId, refusals, admin, onDismiss }: NoticesProps) {
  if (refusals.length === 0) return null;
  const newest = [...refusals].reverse();
  return (
    <section className="egress" aria-labelledby={`egress-${rigId}`}>
      <div className="egress-head">
        <h2 id={`egress-${rigId}`}>Network refused</h2>
        <button type="button" className="secondary small" onClick={onDismiss}>
          Dismiss
        </button>
      </div>
      <ul aria-label="Hosts this rig could not reach">
        {newest.map((r) => (
          <li key={`${r.rule}:${r.host}`} data-rule={r.rule}>
            <span>
              This rig could not reach <strong>{r.host}</strong>: {RULES[r.rule]} (rule <code>{r.rule}</code>
              {r.count > 1 ? `, ${r.count} times` : ""}).
            </span>
            {r.grantable &&
              (admin ? (
                <Link href={grantHref(workspaceId, rigId, r.host)}>Let this rig reach {r.host}</Link>
              ) : (
                <span className="hint">A workspace admin can let it reach this host.</span>
              ))}
          </li>
        ))}
      </ul>
    </section>
  );
}

/** Whether a granted pattern (an exact name, or `*.suffix`) covers `host`. */
export function covers(pattern: string, host: string): boolean {
  const p = pattern.toLowerCase();
  const h = host.toLowerCase();
  return p.startsWith("*.") ? h.endsWith(p.slice(1)) : p === h;
}

interface GrantProps {
  workspaceId: string;
  rigId: string;
  /** The hosts the rig may now reach (its notices about them are done with). */
  onGranted(hosts: string[]): void;
}

/** The admin's form: host names (exact, or `*.suffix`) this rig may reach from now on. */
export function GrantHosts({ workspaceId, rigId, onGranted }: GrantProps) {
  const write = useWrite();
  const action = useAction();
  const location = useLocation();
  const asked = new URLSearchParams(location.split("?")[1] ?? "").get("grant");
  const [hosts, setHosts] = useState(asked ?? "");
  const { busy } = action;
  const [done, setDone] = useState<string[] | null>(null);
  const error = action.error?.message ?? null;
  const field = useRef<HTMLInputElement>(null);

  useEffect(() => {
    if (!asked) return;
    setHosts(asked);
    setDone(null);
    field.current?.scrollIntoView({ block: "center" });
    field.current?.focus();
  }, [asked]);

  const grant = (e: FormEvent) => {
    e.preventDefault();
    const list = hosts.split(/[\s,]+/).filter(Boolean);
    if (list.length === 0) return;
    void action.run(() => write("rig.grantHosts", { workspace_id: workspaceId, rigId, hosts: list })).then((r) => {
      if (!r) return;
      setDone(r.granted);
      setHosts("");
      onGranted(r.granted);
    });
  };

  return (
    <form className="grant-hosts" onSubmit={grant}>
      <label htmlFor={`grant-${rigId}`}>Host names (exact, or *.suffix; separate several with spaces)</label>
      <div className="row">
        <input
          id={`grant-${rigId}`}
          ref={field}
          type="text"
          spellCheck={false}
          autoComplete="off"
          value={hosts}
          onChange={(e) => setHosts(e.target.value)}
        />
        <button type="submit" className="small" disabled={busy || !hosts.trim()}>
          Let this rig reach them
        </button>
      </div>
      {done && (
        <p role="status">
          This rig may now reach {done.join(", ")}. Programs in it see the change on their next connection.
        </p>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}
