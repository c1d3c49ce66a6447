/** The app: the credential decides between the connect screen and the signed-in shell; the path picks the screen.
 * A credential offered by a link (not the answer to a sign-in this tab started) comes first: the person confirms
 * or declines it before anything else runs with it. A sign-in link's code is redeemed before that, and its
 * credential then follows the same rule (`auth/signin.ts`). */
import { useCallback, useEffect, useState } from "react";
import { clearToken, loadToken, saveToken, TOKEN_KEY } from "./auth/credential";
import { discardCredential } from "./data/credentials";
import { keepUnlessReplacing, takeFragmentHandoff } from "./auth/signin";
import { navigate, parseRoute, safeNext, useLocation } from "./router";
import { ConfirmSignIn } from "./screens/ConfirmSignIn";
import { Connect } from "./screens/Connect";
import { SignInLink } from "./screens/SignInLink";
import { SignedIn } from "./SignedIn";

const REJECTED = "Your sign-in is no longer accepted by this server (it was revoked or expired). Connect again.";

export function App({
  initialOffer = null,
  initialLink = null,
}: {
  initialOffer?: string | null;
  initialLink?: string | null;
}) {
  const [token, setToken] = useState<string | null>(() => loadToken(window.localStorage));
  const [offer, setOffer] = useState<string | null>(initialOffer);
  // The offer is the credential a sign-in link's code was redeemed for: declined, it is revoked.
  const [offerFromLink, setOfferFromLink] = useState(false);
  const [link, setLink] = useState<string | null>(initialLink);
  const [notice, setNotice] = useState<string | null>(null);
  const location = useLocation();
  const url = new URL(location, window.location.origin);
  const route = parseRoute(url.pathname, url.search);

  // Another tab signing in or out, or a `#token=` hand-off into this open tab.
  useEffect(() => {
    const fromStorage = (e: StorageEvent) => {
      if (e.key === TOKEN_KEY || e.key === null) setToken(loadToken(window.localStorage));
    };
    const fromHash = () => {
      const arrival = takeFragmentHandoff(window.location, window.history, window.sessionStorage, window.localStorage);
      if (arrival?.kind === "started") {
        setOffer(null);
        setToken(arrival.token);
      } else if (arrival?.kind === "link") {
        setLink(arrival.code);
      } else if (arrival) {
        setOffer(arrival.token);
        setOfferFromLink(false);
      }
    };
    window.addEventListener("storage", fromStorage);
    window.addEventListener("hashchange", fromHash);
    return () => {
      window.removeEventListener("storage", fromStorage);
      window.removeEventListener("hashchange", fromHash);
    };
  }, []);

  useEffect(() => {
    if (offer || link) return; // the confirmation (or the link's redemption) decides where the person goes
    if (!token && route.name !== "connect") {
      const here = url.pathname === "/" ? "" : `?next=${encodeURIComponent(url.pathname + url.search)}`;
      navigate(`/connect${here}`, true);
    } else if (token && route.name === "connect") {
      navigate(safeNext(route.next) ?? "/", true);
    }
  });

  const connected = useCallback((t: string) => {
    saveToken(window.localStorage, t);
    setNotice(null);
    setToken(t);
  }, []);
  const signedOut = useCallback(() => {
    clearToken(window.localStorage);
    navigate("/connect", true);
    setNotice(null);
    setToken(null);
  }, []);
  const rejected = useCallback(() => {
    clearToken(window.localStorage);
    setNotice(REJECTED);
    setToken(null);
  }, []);

  const accepted = useCallback(() => {
    if (offer) connected(offer);
    setOffer(null);
  }, [offer, connected]);
  const declined = useCallback(() => {
    if (offer && offerFromLink) void discardCredential(offer);
    setOffer(null);
  }, [offer, offerFromLink]);
  const redeemed = useCallback((t: string) => {
    const arrival = keepUnlessReplacing(window.localStorage, t);
    setLink(null);
    if (arrival.kind === "started") {
      setNotice(null);
      setToken(t);
    } else {
      setOffer(t);
      setOfferFromLink(true);
    }
  }, []);
  const linkDismissed = useCallback(() => setLink(null), []);

  if (offer) return <ConfirmSignIn offered={offer} current={token} onAccept={accepted} onDecline={declined} />;
  if (link) return <SignInLink code={link} onRedeemed={redeemed} onDismiss={linkDismissed} />;
  if (!token) return route.name === "connect" ? <Connect notice={notice} onConnected={connected} /> : null;
  if (route.name === "connect") return null;
  return <SignedIn token={token} route={route} onSignedOut={signedOut} onRejected={rejected} />;
}
