/** A one-time sign-in link being redeemed (`#signin=<code>`, `auth/signinLink.ts`): a line while the server
 * answers, then either the credential goes to the app (kept, or offered for confirmation where the browser is
 * signed in already) or the refusal is shown with what to do, and nothing is changed. */
import { useEffect, useState } from "react";
import { redeemLinkCode } from "../auth/signinLink";
import { Unchanged } from "./ConfirmSignIn";
import { defaultDeviceName } from "./Connect";

export function SignInLink({
  code,
  onRedeemed,
  onDismiss,
}: {
  code: string;
  onRedeemed(token: string): void;
  onDismiss(): void;
}) {
  const [failure, setFailure] = useState<string | null>(null);

  useEffect(() => {
    let live = true;
    setFailure(null);
    void redeemLinkCode(code, defaultDeviceName(navigator.userAgent)).then((result) => {
      if (!live) return;
      if (result.ok) onRedeemed(result.token);
      else setFailure(result.message);
    });
    return () => {
      live = false;
    };
  }, [code, onRedeemed]);

  return (
    <main className="connect" aria-labelledby="link-title">
      <h1 id="link-title">{failure ? "This sign-in link does not work" : "Signing in"}</h1>
      <section className="card" aria-label="The sign-in link">
        {failure ? (
          <Unchanged why={failure} onContinue={onDismiss} />
        ) : (
          <p role="status">Checking the sign-in link…</p>
        )}
      </section>
    </main>
  );
}
