/** The server owner's settings (`/settings/server/sso`, `/settings/server/rigs`, `/settings/server/users`,
 * `/settings/server/storage`): one
 * page with a link per section. Anyone else is told plainly that these are the server owner's, and no
 * server-owner op is called for them. */
import { Link } from "../../Link";
import type { ServerSection } from "../../router";
import { ClipboardAccess } from "./ClipboardAccess";
import { RigsSettings } from "./RigsSettings";
import { SsoSettings } from "./SsoSettings";
import { StorageSettings } from "./StorageSettings";
import { UsersSettings } from "./UsersSettings";
import "./settings.css";
import { useRead } from "../../data/queries";

const TITLES: Record<ServerSection, string> = {
  sso: "Single sign-on",
  rigs: "Rigs",
  users: "Users",
  storage: "Storage and retention",
};

export default function ServerSettings({ section }: { section: ServerSection }) {
  const me = useRead("users.me", {});
  if (me.error) {
    return (
      <p className="error" role="alert">
        {me.error.message}
      </p>
    );
  }
  if (!me.data) return <p aria-busy="true">Loading…</p>;
  if (!me.data.isServerOwner) {
    return (
      <>
        <h1>Server settings</h1>
        <p className="notice" role="alert">
          Server owner only: these settings belong to the person who operates this Hangar server. Owning a workspace
          is not enough. Ask the server owner if something here needs changing.
        </p>
        <p>
          <Link href="/settings/devices">Your devices</Link> · <Link href="/">Your workspaces</Link>
        </p>
        {/* Clipboard access is each person's own (rigs.md), so it is here for everyone. */}
        {section === "rigs" && (
          <div className="settings">
            <ClipboardAccess selfId={me.data.id} serverOwner={false} />
          </div>
        )}
      </>
    );
  }
  return (
    <div className="settings">
      <p className="crumbs">Server settings</p>
      <h1>{TITLES[section]}</h1>
      <nav aria-label="Server settings sections" className="sections">
        {(Object.keys(TITLES) as ServerSection[]).map((s) => (
          <Link key={s} href={`/settings/server/${s}`} aria-current={s === section ? "page" : undefined}>
            {TITLES[s]}
          </Link>
        ))}
      </nav>
      {section === "sso" && <SsoSettings />}
      {section === "rigs" && <RigsSettings selfId={me.data.id} />}
      {section === "users" && <UsersSettings selfId={me.data.id} />}
      {section === "storage" && <StorageSettings />}
    </div>
  );
}
