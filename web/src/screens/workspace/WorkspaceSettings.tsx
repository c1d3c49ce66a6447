/** A workspace's settings (`/settings/workspaces/<id>`): members and roles, invites, guardrails, and the place of
 * the chat bridge (connection, guided setup, links: web/src/screens/chat/). */
import { lazy, Suspense } from "react";
import { workspaceRoleLabel } from "../../labels";
import { Link } from "../../Link";
import { auditPath, workspacePath } from "../../router";
import { NotAMember, WorkspaceHeader } from "../../components/WorkspaceHeader";
import { useRead } from "../../data/queries";
import { isAdmin, useWorkspace } from "../../data/workspaces";
import { DeleteWorkspace } from "./DeleteWorkspace";
import { ExportWorkspace } from "../transfer/Transfer";
import { Guardrails } from "./Guardrails";
import { InviteForm, MemberRoles } from "./Members";
import "./workspace.css";

// The chat bridge's settings (forms, dialog, roster) load only when a settings page is opened.
const ChatBridge = lazy(() => import("../chat/ChatBridge"));
const ForgePanel = lazy(() => import("../forges/ForgePanel"));

export default function WorkspaceSettings({ workspaceId }: { workspaceId: string }) {
  const { workspace, missing, error } = useWorkspace(workspaceId);
  const me = useRead("users.me", {});
  const admin = isAdmin(workspace?.role);
  return (
    <div className="ws">
      <WorkspaceHeader
        workspaceId={workspaceId}
        workspace={workspace}
        title={workspace ? `Settings of ${workspace.name}` : "Workspace settings"}
      />
      {error && (
        <p className="error" role="alert">
          {error.message}
        </p>
      )}
      {missing && <NotAMember />}
      {workspace && (
        <>
          <nav aria-label="Workspace" className="subnav">
            <Link href={workspacePath(workspaceId)}>Workspace home</Link>
            {admin && <Link href={auditPath(workspaceId)}>Audit log and events</Link>}
          </nav>
          {!admin && (
            <p className="notice">
              Your role is <strong>{workspaceRoleLabel(workspace.role)}</strong>: you can see these settings, and only admins and owners
              can change them.
            </p>
          )}
          <section aria-labelledby="members-title" className="panel" id="members">
            <h2 id="members-title">Members and roles</h2>
            <p className="hint">
              Only owners grant or take away the owner role, and a workspace always keeps one owner.
            </p>
            {me.data && <MemberRoles workspaceId={workspaceId} me={me.data.id} />}
          </section>
          {admin && (
            <section aria-labelledby="invites-title" className="panel" id="invites">
              <h2 id="invites-title">Invites</h2>
              <InviteForm workspaceId={workspaceId} myRole={workspace.role} />
            </section>
          )}
          <section aria-labelledby="guardrails-title" className="panel" id="guardrails">
            <h2 id="guardrails-title">Guardrails</h2>
            <Guardrails workspaceId={workspaceId} canChange={admin} />
          </section>
          {(admin || me.data?.isServerOwner) && (
            <section aria-labelledby="export-title" className="panel" id="export">
              <h2 id="export-title">Export</h2>
              <ExportWorkspace workspaceId={workspaceId} />
            </section>
          )}
          <section aria-labelledby="chat-title" className="panel" id="chat-bridge">
            <h2 id="chat-title">Chat bridge</h2>
            <p className="hint">
              People reach this workspace's agents from a chat (Slack): mention the bot, reply in its thread, or send
              it a direct message.
            </p>
            <Suspense fallback={<p role="status">Loading the chat bridge settings…</p>}>
              <ChatBridge workspaceId={workspaceId} role={workspace.role} me={me.data?.id} />
            </Suspense>
          </section>
          {admin && (
            <section aria-labelledby="forge-title" className="panel" id="forge">
              <h2 id="forge-title">Forge</h2>
              <p className="hint">
                Connect GitHub so pipeline shell steps get short-lived tokens for this workspace's repos.
              </p>
              <Suspense fallback={<p role="status">Loading the forge settings…</p>}>
                <ForgePanel workspaceId={workspaceId} />
              </Suspense>
            </section>
          )}
          {admin && <DeleteWorkspace workspaceId={workspaceId} name={workspace.name} />}
        </>
      )}
    </div>
  );
}
