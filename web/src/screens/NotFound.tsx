import { Link } from "../Link";

export function NotFound({ path }: { path: string }) {
  return (
    <>
      <h1>Page not found</h1>
      <p>
        Nothing lives at <code>{path}</code> in this version of the web client. <Link href="/">Go to your workspaces</Link>.
      </p>
    </>
  );
}
