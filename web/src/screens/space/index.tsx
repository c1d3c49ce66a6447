/** The space screen's entry in the first-load bundle: it loads the screen's own chunk (and its styles) on first
 * use. Not `React.lazy`: React holds back a resolved Suspense boundary for a moment to batch reveals, which would
 * cost a space a visible fraction of a second on every deep link. */
import { useEffect, useState } from "react";
import type { SpaceRoute } from "./SpaceScreen";

type Module = typeof import("./SpaceScreen");

let loaded: Module | null = null;
let loading: Promise<Module> | null = null;

function load(): Promise<Module> {
  loading ??= import("./SpaceScreen").then((m) => (loaded = m));
  return loading;
}

export function Space({ route }: { route: SpaceRoute }) {
  const [mod, setMod] = useState<Module | null>(() => loaded ?? (load(), null));
  const [failed, setFailed] = useState(false);
  useEffect(() => {
    if (mod) return;
    let live = true;
    load().then(
      (m) => live && setMod(m),
      () => {
        loading = null; // a later visit tries again
        if (live) setFailed(true);
      },
    );
    return () => {
      live = false;
    };
  }, [mod]);
  if (failed) return <p role="alert">The space screen could not be loaded; reload the page to try again.</p>;
  if (!mod) return <p role="status">Loading the space…</p>;
  return <mod.SpaceScreen route={route} />;
}
