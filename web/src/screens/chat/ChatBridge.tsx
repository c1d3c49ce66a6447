/** The chat bridge's part of a workspace's settings, loaded only with it: per provider (from `chat.providers`), the
 * connection status followed live, the connect dialog and guided setup or bot profile for admins, and for
 * everyone their own link and the roster of linked members. */
import { useRef, useState } from "react";
import type { ChatStatus, ProviderEntry } from "../../generated/ops";
import { Refusal } from "../../components/Outcome";
import { useRead } from "../../data/queries";
import { BotProfileEditor, GuidedSetup } from "./BotProfile";
import { ConnectForm } from "./ConnectForm";
import { ConnectionHolder } from "./ConnectionHolder";
import { ConnectionTrouble } from "./ConnectionTrouble";
import { useChatStatus, useOnScreen, useRoster } from "./hooks";
import { LinkMyAccount, Roster } from "./Links";
import "./chat.css";

export interface ChatBridgeProps {
  workspaceId: string;
  role: string;
  me: string | undefined;
}

export default function ChatBridge(props: ChatBridgeProps) {
  const providers = useRead("chat.providers", { workspace_id: props.workspaceId });
  return (
    <div className="chat-bridge">
      {providers.error?.code === "unknown_op" ? (
        <p className="notice">This server runs without the chat bridge: there is nothing to set up here.</p>
      ) : (
        <Refusal error={providers.error} />
      )}
      {!providers.data && !providers.error && <p role="status">Loading the chat providers…</p>}
      {providers.data?.map((entry) => <ProviderPanel key={entry.provider} entry={entry} {...props} />)}
    </div>
  );
}

const STATE_TEXT: Record<ChatStatus["state"], string> = {
  disconnected: "Not connected",
  connecting: "Connecting…",
  connected: "Connected",
  error: "Connection error",
};

function StatusLine({ status, label }: { status: ChatStatus; label: string }) {
  return (
    <div className="chat-status" role="status" aria-label={`${label} connection`} data-state={status.state}>
      <p>
        <span className="chat-dot" aria-hidden="true" />
        <strong>{STATE_TEXT[status.state]}</strong>
        {status.state === "error" && status.error && (
          <>
            : <span className="chat-error-text">{status.error}</span>
          </>
        )}
      </p>
      <ConnectionHolder status={status} />
      <ConnectionTrouble status={status} />
      {status.state === "connected" && (
        <p className="hint">
          {status.streamingAvailable
            ? "Replies stream into the chat as the agent writes them."
            : "Streaming is not available: replies are posted whole when the agent is done."}
        </p>
      )}
      {status.state === "error" && (
        <p className="hint">Retries have stopped until new credentials are given: connect again below.</p>
      )}
    </div>
  );
}

function ProviderPanel(props: ChatBridgeProps & { entry: ProviderEntry }) {
  const { entry, workspaceId } = props;
  const here = useRef<HTMLDivElement>(null);
  const onScreen = useOnScreen(here);
  const status = useChatStatus(workspaceId, entry.provider, onScreen);
  const roster = useRoster(workspaceId, entry.provider);
  const [command, setCommand] = useState<string | undefined>(undefined);
  const admin = props.role === "admin" || props.role === "owner";
  const canLink = admin || props.role === "member";
  const shown = status.data ?? entry.status ?? undefined;
  const state = shown?.state ?? "disconnected";
  return (
    <div className="chat-provider" ref={here}>
      {shown && <StatusLine status={shown} label={entry.label} />}
      <Refusal error={status.error} />
      {admin ? (
        <>
          <ConnectForm
            workspaceId={workspaceId}
            entry={entry}
            connected={state === "connected"}
            stored={state !== "disconnected"}
            onChanged={status.refresh}
          />
          {state === "connected" ? (
            <BotProfileEditor workspaceId={workspaceId} provider={entry.provider} onCommand={setCommand} />
          ) : (
            <GuidedSetup workspaceId={workspaceId} provider={entry.provider} label={entry.label} />
          )}
        </>
      ) : (
        <p className="hint">Only admins and owners connect {entry.label} and set up its bot.</p>
      )}
      <h3>Your chat account</h3>
      {canLink && props.me ? (
        <LinkMyAccount
          workspaceId={workspaceId}
          provider={entry.provider}
          label={entry.label}
          command={command ?? entry.defaultCommand}
          me={props.me}
          links={roster.links}
        />
      ) : (
        <p className="hint">Guests do not link a chat account.</p>
      )}
      <Refusal error={roster.error} />
      <Roster
        workspaceId={workspaceId}
        provider={entry.provider}
        label={entry.label}
        links={roster.links}
        me={props.me}
        admin={admin}
      />
    </div>
  );
}
