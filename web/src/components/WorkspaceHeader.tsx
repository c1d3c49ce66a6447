/** The breadcrumb and title every workspace screen starts with, and what it says to someone not a member. */
import type { ReactNode } from "react";
import type { WorkspaceEntry } from "../generated/ops";
import { Link } from "../Link";
import { workspacePath } from "../router";

export function WorkspaceHeader(props: {
  workspaceId: string;
  workspace: WorkspaceEntry | undefined;
  title?: string | undefined;
  children?: ReactNode;
}) {
  const { workspace, workspaceId } = props;
  return (
    <>
      <p className="crumbs">
        <Link href="/">Workspaces</Link>
        {props.title !== undefined && workspace && (
          <>
            {" / "}
            <Link href={workspacePath(workspaceId)}>{workspace.name}</Link>
          </>
        )}
      </p>
      <h1>{props.title ?? workspace?.name ?? "Workspace"}</h1>
      {props.children}
    </>
  );
}

export function NotAMember() {
  return <p role="alert">This workspace does not exist, or you are not one of its members.</p>;
}
