import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App";
import { adoptFragmentToken } from "./auth/credential";
import "./styles.css";

// Before anything renders: the SSO hand-off's `#token=` is kept and taken out of the address bar.
adoptFragmentToken(window.location, window.history, window.localStorage);

const root = document.getElementById("root");
if (root) {
  createRoot(root).render(
    <StrictMode>
      <App />
    </StrictMode>,
  );
}
