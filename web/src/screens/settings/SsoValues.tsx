/** The values an identity provider's administrator registers (SAML entity id, ACS URL and metadata URL; the OIDC
 * redirect URI; the SCIM base URL), each with a copy button. They come from the server (`sso.endpoints`), built
 * from the origin its sign-ins use, never from this page's address: behind a proxy the two differ. */
import type { SsoEndpoints } from "../../generated/ops";
import { CopyButton } from "../../components/CopyButton";
import type { ValueRow } from "./fields";

/** Where the values come from, in a sentence (and what to do when they cannot be fixed ones). */
function Origin({ endpoints }: { endpoints: SsoEndpoints }) {
  if (endpoints.originSource === "publicUrl") {
    return <p className="hint">Built from the server&apos;s public URL (--public-url).</p>;
  }
  if (endpoints.originSource === "listener") {
    return (
      <p className="hint">
        Built from the address the server listens on. If people reach it at another address (behind a reverse proxy,
        say), start it with --public-url set to that address.
      </p>
    );
  }
  return (
    <p className="notice" role="note">
      This server listens on every address and has no public URL, so sign-ins follow whichever address a browser uses
      and these values are this machine&apos;s own. Start it with --public-url set to the address people use, so the
      identity provider is given fixed values.
    </p>
  );
}

export function SsoValues(props: { title: string; rows: ValueRow[]; endpoints: SsoEndpoints; id: string }) {
  return (
    <section className="idp-values" aria-labelledby={props.id}>
      <h3 id={props.id}>{props.title}</h3>
      <Origin endpoints={props.endpoints} />
      <dl className="facts values">
        {props.rows.map((row) => (
          <div key={row.label}>
            <dt>{row.label}</dt>
            <dd>
              <code className="value">{row.value}</code>
              <CopyButton text={row.value} label={`Copy ${row.label}`} />
              {row.hint && <span className="hint">{row.hint}</span>}
            </dd>
          </div>
        ))}
      </dl>
    </section>
  );
}
