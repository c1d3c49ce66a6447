/** The app: the credential decides between the connect screen and the signed-in shell; the path picks the screen. */
import { useCallback, useEffect, useState } from "react";
import { adoptFragmentToken, clearToken, loadToken, saveToken, TOKEN_KEY } from "./auth/credential";
import { navigate, parseRoute, safeNext, useLocation } from "./router";
import { Connect } from "./screens/Connect";
import { SignedIn } from "./SignedIn";

const REJECTED = "Your sign-in is no longer accepted by this server (it was revoked or expired). Connect again.";

export function App() {
  const [token, setToken] = useState<string | null>(() => loadToken(window.localStorage));
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
      const taken = adoptFragmentToken(window.location, window.history, window.localStorage);
      if (taken) setToken(taken);
    };
    window.addEventListener("storage", fromStorage);
    window.addEventListener("hashchange", fromHash);
    return () => {
      window.removeEventListener("storage", fromStorage);
      window.removeEventListener("hashchange", fromHash);
    };
  }, []);

  useEffect(() => {
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

  if (!token) return route.name === "connect" ? <Connect notice={notice} onConnected={connected} /> : null;
  if (route.name === "connect") return null;
  return <SignedIn token={token} route={route} onSignedOut={signedOut} onRejected={rejected} />;
}
