import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App";
import { takeFragmentHandoff } from "./auth/signin";
import "./styles.css";

// Before anything renders: a `#token=` hand-off or a `#signin=` link leaves the address bar; the answer to a sign-in
// this tab started is kept, any other credential waits for the person to confirm it, a link's code is redeemed.
const arrival = takeFragmentHandoff(window.location, window.history, window.sessionStorage, window.localStorage);

const root = document.getElementById("root");
if (root) {
  createRoot(root).render(
    <StrictMode>
      <App
        initialOffer={arrival?.kind === "offered" ? arrival.token : null}
        initialLink={arrival?.kind === "link" ? arrival.code : null}
      />
    </StrictMode>,
  );
}
