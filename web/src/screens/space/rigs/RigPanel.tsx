/** One rig of the space: its state and controller (take control, hand back), what its network refused (with the
 * admin's way to let a host through), its forwarded ports with links, file drops through the file lane, and the
 * terminal (terminal rigs), the live view with its clipboard (browser rigs), the desktop (computer rigs) or the
 * phone's screen (mobile rigs). `rig.watch` keeps all of it live while the tab is open. */
import { lazy, Suspense, useCallback, useState } from "react";
import type { EgressRefusal, PortRow, RigPorts, RigRow } from "../../../generated/ops";
import { useAction, useWrite } from "../../../data/mutations";
import { useRead } from "../../../data/queries";
import { useWatch } from "../../../data/watch";
import { covers, EgressNotices, GrantHosts } from "./Egress";
import { engineLabel } from "./engines";
import { FileDrop } from "./FileDrop";
import { portUrl } from "./portLinks";

const Terminal = lazy(() => import("./Terminal").then((m) => ({ default: m.Terminal })));
const LiveView = lazy(() => import("./LiveView").then((m) => ({ default: m.LiveView })));
const DesktopView = lazy(() => import("./DesktopView").then((m) => ({ default: m.DesktopView })));
const PhoneView = lazy(() => import("./PhoneView").then((m) => ({ default: m.PhoneView })));

/** Where a rig's file drops land (chosen by the server, rigs.md). */
const DROPS: Partial<Record<RigRow["surface"], string>> = {
  terminal: "~/drops",
  browser: "/tmp/hangar-drops",
  computer: "~/Drops",
};

interface PortsProps {
  workspaceId: string;
  rigId: string;
  ports: PortRow[];
  onPorts(ports: RigPorts): void;
}

function Ports({ workspaceId, rigId, ports, onPorts }: PortsProps) {
  const write = useWrite();
  const action = useAction();
  const error = action.error?.message ?? null;
  const share = (port: PortRow, on: boolean) =>
    action.run(async () =>
      onPorts(await write("rig.sharePort", { workspace_id: workspaceId, rigId, guestPort: port.guestPort, share: on })),
    );
  if (ports.length === 0) return <p className="hint">Nothing listens in the rig yet; ports appear here as they open.</p>;
  return (
    <>
      <ul className="ports">
        {ports.map((p) => {
          const url = portUrl(p, window.location);
          return (
            <li key={p.guestPort}>
              <span>
                Port <strong>{p.guestPort}</strong>
                {p.forwarded
                  ? ` → ${p.hostAddress ?? "?"}:${p.hostPort ?? "?"} on the server`
                  : " (not forwarded: the limit is reached)"}
                {p.lanPort !== null && `, shared on the network at ${p.lanPort}`}
              </span>
              {url && (
                <a href={url} target="_blank" rel="noreferrer noopener">
                  Open {p.guestPort}
                </a>
              )}
              {p.forwarded && (
                <button type="button" className="secondary small" onClick={() => share(p, p.lanPort === null)}>
                  {p.lanPort === null ? "Share on network" : "Stop sharing"}
                </button>
              )}
            </li>
          );
        })}
      </ul>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </>
  );
}

export function RigPanel({ workspaceId, rig, onChanged }: { workspaceId: string; rig: RigRow; onChanged(): void }) {
  const me = useRead("users.me", {});
  const workspaces = useRead("workspaces.list", {});
  const role = workspaces.data?.find((w) => w.id === workspaceId)?.role;
  const admin = role === "admin" || role === "owner";
  const [egress, setEgress] = useState<EgressRefusal[]>([]);
  // A grant of a host ends its "not on the allowlist" notices (this person's own grant, or another admin's).
  const forgetGranted = useCallback((hosts: string[]) => {
    setEgress((list) => list.filter((r) => r.rule !== "allowlist" || !hosts.some((h) => covers(h, r.host))));
  }, []);
  const [phase, setPhase] = useState(rig.status);
  const [detail, setDetail] = useState(rig.statusDetail);
  const rigId = rig.rigId;
  const ws = { workspace_id: workspaceId, rigId };
  const ports = useRead("rig.ports", ws);
  const write = useWrite();
  const action = useAction();
  const { busy } = action;

  const watch = useWatch("rig.watch", ws, {
    onReply: (snap) => {
      setPhase(snap.phase);
      setDetail(snap.statusDetail);
      ports.update((old) => old && { ...old, ports: snap.ports });
      setEgress(snap.egress);
    },
    onEvent: (event) => {
      switch (event.type) {
        case "phase":
          setPhase(event.phase);
          setDetail(event.detail);
          onChanged();
          break;
        case "progress":
          setDetail(event.detail); // a boot's step: a first pack build's, then the boot's own
          break;
        case "control":
          onChanged(); // the row names the controller
          break;
        case "ports":
          ports.reload();
          break;
        case "egressGranted":
          forgetGranted(event.hosts);
          break;
        case "egress": {
          const told = event.refusal;
          setEgress((list) => [...list.filter((r) => r.host !== told.host || r.rule !== told.rule), told]);
          break;
        }
      }
    },
  });
  const error = action.error?.message ?? watch.error?.message ?? null;

  // The write marks the space's rig list stale: the row names the new controller once it is read again.
  const control = (take: boolean) => void action.run(() => write(take ? "rig.takeControl" : "rig.releaseControl", ws));

  const mine = rig.controller !== null && rig.controller.userId === me.data?.id;
  // A counted step of the boot (a first pack build's "… (4/10)") fills the bar; otherwise it just runs.
  const counted = /\((\d+)\/(\d+)\)$/.exec(detail);
  const ready = phase === "ready";
  return (
    <div className="rig">
      <div className="rig-bar">
        <p className="rig-state" data-phase={phase}>
          <span className="badge">{rig.surface === "browser" ? engineLabel(rig.engine) : rig.surface}</span> {phase}
          {detail && phase !== "ready" ? ` — ${detail}` : ""}
          {phase === "provisioning" && (
            <progress
              aria-label="Starting the rig"
              max={counted ? Number(counted[2]) : undefined}
              value={counted ? Number(counted[1]) : undefined}
            />
          )}
        </p>
        <p className="controller">
          {rig.controller
            ? mine
              ? "You have control: agents' and others' actions are refused."
              : `${rig.controller.displayName} has control.`
            : "Nobody has taken control; agents may act in the rig."}
        </p>
        {mine ? (
          <button type="button" className="secondary small" disabled={busy} onClick={() => control(false)}>
            Hand back
          </button>
        ) : (
          <button type="button" className="secondary small" disabled={busy || !ready} onClick={() => control(true)}>
            Take control
          </button>
        )}
      </div>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <EgressNotices
        workspaceId={workspaceId}
        rigId={rigId}
        refusals={egress}
        admin={admin}
        onDismiss={() => setEgress([])}
      />
      {rig.surface === "terminal" && ready && (
        <Suspense fallback={<p role="status">Loading the terminal…</p>}>
          <Terminal workspaceId={workspaceId} rigId={rigId} />
        </Suspense>
      )}
      {rig.surface === "browser" && ready && (
        <Suspense fallback={<p role="status">Loading the live view…</p>}>
          <LiveView workspaceId={workspaceId} rigId={rigId} />
        </Suspense>
      )}
      {rig.surface === "computer" && ready && (
        <Suspense fallback={<p role="status">Loading the desktop…</p>}>
          <DesktopView workspaceId={workspaceId} rigId={rigId} />
        </Suspense>
      )}
      {rig.surface === "mobile" && ready && (
        <Suspense fallback={<p role="status">Loading the phone…</p>}>
          <PhoneView workspaceId={workspaceId} rigId={rigId} inControl={mine} />
        </Suspense>
      )}
      {/* A phone has no ports, drops or egress gate the server reaches. */}
      {rig.surface !== "mobile" && (
        <div className="rig-side">
          <section aria-labelledby={`ports-${rigId}`}>
            <h2 id={`ports-${rigId}`}>Forwarded ports</h2>
            <Ports workspaceId={workspaceId} rigId={rigId} ports={ports.data?.ports ?? []} onPorts={ports.set} />
          </section>
          <section aria-labelledby={`drop-${rigId}`}>
            <h2 id={`drop-${rigId}`}>Files</h2>
            <FileDrop
              workspaceId={workspaceId}
              rigId={rigId}
              disabled={!ready}
              folder={DROPS[rig.surface] ?? "~/drops"}
            />
          </section>
          {admin && (
            <section aria-labelledby={`hosts-${rigId}`}>
              <h2 id={`hosts-${rigId}`}>Hosts this rig may reach</h2>
              <GrantHosts
                workspaceId={workspaceId}
                rigId={rigId}
                onGranted={forgetGranted}
              />
            </section>
          )}
        </div>
      )}
    </div>
  );
}
