import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { ChatStatus, CredentialFieldView } from "../src/generated/ops";
import { ConnectionHolder, holderText } from "../src/screens/chat/ConnectionHolder";
import {
  credentialProblem,
  credentialsToSend,
  linkCommand,
  normalizeCommand,
  profileEdits,
  timeLeft,
  type ProfileForm,
} from "../src/screens/chat/logic";

// As chat.providers ships them (the refusal sentence is the server's, carried in the descriptor).
const BOT: CredentialFieldView = {
  id: "botToken",
  label: "Bot user OAuth token",
  required: true,
  prefix: "xoxb-",
  purpose: "Bot API access",
  refusal: "Bot user OAuth token must start with xoxb-",
};
const REFRESH: CredentialFieldView = {
  id: "configRefreshToken",
  label: "App configuration refresh token",
  required: false,
  prefix: "xoxe",
  purpose: "App management",
  refusal: "App configuration refresh token must start with xoxe",
};

describe("credential check", () => {
  it("refuses a wrong prefix with exactly the descriptor's sentence", () => {
    expect(credentialProblem(BOT, "xapp-1-abc")).toBe(BOT.refusal);
    expect(credentialProblem(REFRESH, "xoxb-1")).toBe(REFRESH.refusal);
    // The sentence comes from the descriptor, not from this client.
    expect(credentialProblem({ ...BOT, refusal: "something else entirely" }, "nope")).toBe("something else entirely");
  });

  it("trims before checking and passes a right prefix", () => {
    expect(credentialProblem(BOT, "  xoxb-123  ")).toBeNull();
    expect(credentialProblem(BOT, "XOXB-123")).toBe(BOT.refusal); // prefixes are case-sensitive, as on the server
  });

  it("requires a required field and lets an optional one stay empty", () => {
    expect(credentialProblem(BOT, "   ")).toBe("Bot user OAuth token is required");
    expect(credentialProblem(REFRESH, "")).toBeNull();
  });

  it("sends trimmed values of declared fields only, empty ones left out", () => {
    expect(credentialsToSend([BOT, REFRESH], { botToken: " xoxb-1 ", configRefreshToken: "", other: "x" })).toEqual({
      botToken: "xoxb-1",
    });
  });
});

describe("slash command normalization", () => {
  it("strips leading slashes, lower-cases, drops what is outside [a-z0-9_-]", () => {
    expect(normalizeCommand("//Hangar")).toBe("hangar");
    expect(normalizeCommand(" /My Bot!_v-2 ")).toBe("mybot_v-2");
    expect(normalizeCommand("a/b")).toBe("ab");
  });

  it("falls back to the default word when nothing is left", () => {
    expect(normalizeCommand("")).toBe("hangar");
    expect(normalizeCommand("///")).toBe("hangar");
    expect(normalizeCommand("€€")).toBe("hangar");
  });

  it("builds the link command from the profile's word", () => {
    expect(linkCommand(undefined, "ABC234")).toBe("/hangar link ABC234");
    expect(linkCommand("/Ops", "ABC234")).toBe("/ops link ABC234");
  });
});

describe("bot profile edits", () => {
  const form: ProfileForm = {
    appName: "",
    botDisplayName: "",
    description: "",
    agentDescription: "",
    command: "",
    agentEnabled: true,
  };

  it("leaves empty boxes out (unchanged) and collapses white space", () => {
    const { edits, problems } = profileEdits({ ...form, description: "  Helps   with\nreleases ", agentEnabled: false });
    expect(problems).toEqual({});
    expect(edits).toEqual({ description: "Helps with releases", agentEnabled: false });
  });

  it("refuses values over their limits, naming the field", () => {
    const { problems } = profileEdits({
      ...form,
      appName: "x".repeat(36),
      botDisplayName: "y".repeat(80),
      description: "z".repeat(141),
      agentDescription: "w".repeat(301),
      command: "c".repeat(33),
    });
    expect(problems.appName).toBe("App name is 36 characters; the limit is 35");
    expect(problems.botDisplayName).toBeUndefined();
    expect(problems.description).toMatch(/limit is 140/);
    expect(problems.agentDescription).toMatch(/limit is 300/);
    expect(problems.command).toMatch(/limit is 32/);
  });

  it("sends the command normalized, counting its length after normalization", () => {
    const { edits, problems } = profileEdits({ ...form, command: `/${"A".repeat(32)}!!` });
    expect(problems).toEqual({});
    expect(edits.command).toBe("a".repeat(32));
  });
});

describe("code expiry", () => {
  it("counts down in minutes and seconds, never below zero", () => {
    const at = Date.parse("2026-01-01T00:15:00Z");
    expect(timeLeft("2026-01-01T00:15:00Z", at - 14 * 60_000 - 59_000)).toBe("14:59");
    expect(timeLeft("2026-01-01T00:15:00Z", at - 5_000)).toBe("0:05");
    expect(timeLeft("2026-01-01T00:15:00Z", at + 1_000)).toBe("0:00");
  });
});

describe("connection holder", () => {
  const status: ChatStatus = { provider: "chatprovider", state: "connected", error: null, streamingAvailable: true };

  it("names the server process holding the connection", () => {
    const html = renderToStaticMarkup(
      createElement(ConnectionHolder, { status: { ...status, owner: { host: "host-a", pid: 4242 } } }),
    );
    expect(html).toContain("Held by server host-a (pid 4242)");
  });

  it("shows nothing while no server holds it", () => {
    expect(renderToStaticMarkup(createElement(ConnectionHolder, { status }))).toBe("");
    expect(renderToStaticMarkup(createElement(ConnectionHolder, { status: { ...status, owner: null } }))).toBe("");
    expect(holderText(undefined)).toBeNull();
  });
});
