import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App";
import { takeFragmentHandoff } from "./auth/signin";
import "./styles.css";

// Before anything renders: a `#token=` hand-off leaves the address bar; the answer to a sign-in this tab started
// is kept, any other credential waits for the person to confirm it.
const arrival = takeFragmentHandoff(window.location, window.history, window.sessionStorage, window.localStorage);

const root = document.getElementById("root");
if (root) {
  createRoot(root).render(
    <StrictMode>
      <App initialOffer={arrival?.kind === "offered" ? arrival.token : null} />
    </StrictMode>,
  );
}
