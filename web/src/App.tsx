/** The app: the credential decides between the connect screen and the signed-in shell; the path picks the screen.
 * A credential offered by a link (not the answer to a sign-in this tab started) comes first: the person confirms
 * or declines it before anything else runs with it. */
import { useCallback, useEffect, useState } from "react";
import { clearToken, loadToken, saveToken, TOKEN_KEY } from "./auth/credential";
import { takeFragmentHandoff } from "./auth/signin";
import { navigate, parseRoute, safeNext, useLocation } from "./router";
import { ConfirmSignIn } from "./screens/ConfirmSignIn";
import { Connect } from "./screens/Connect";
import { SignedIn } from "./SignedIn";

const REJECTED = "Your sign-in is no longer accepted by this server (it was revoked or expired). Connect again.";

export function App({ initialOffer = null }: { initialOffer?: string | null }) {
  const [token, setToken] = useState<string | null>(() => loadToken(window.localStorage));
  const [offer, setOffer] = useState<string | null>(initialOffer);
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
      } else if (arrival) {
        setOffer(arrival.token);
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
    if (offer) return; // the confirmation decides where the person goes
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
  const declined = useCallback(() => setOffer(null), []);

  if (offer) return <ConfirmSignIn offered={offer} current={token} onAccept={accepted} onDecline={declined} />;
  if (!token) return route.name === "connect" ? <Connect notice={notice} onConnected={connected} /> : null;
  if (route.name === "connect") return null;
  return <SignedIn token={token} route={route} onSignedOut={signedOut} onRejected={rejected} />;
}
