import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { ImageView } from "../src/generated/ops";
import { RunsInChoice } from "../src/screens/space/rigs/RunsInChoice";
import { desktopArgs, imagesFor, RUNS_IN, type RunsIn } from "../src/screens/space/rigs/runsIn";

const image = (imageId: string, accelerator: string): ImageView => ({
  imageId,
  name: `desk ${imageId}`,
  sha256: "0".repeat(64),
  fileBytes: 1,
  virtualBytes: 64 << 20,
  importedAt: "2026-11-01T10:00:00Z",
  accelerator,
  bootSeconds: 1,
});
const IMAGES = [image("img-k2", "fullvm-kvm"), image("img-t1", "fullvm-tcg"), image("img-k1", "fullvm-kvm")];

const render = (runsIn: RunsIn, images: ImageView[] | null, imageId = "") =>
  renderToStaticMarkup(
    createElement(RunsInChoice, { runsIn, onRunsIn: () => {}, imageId, onImage: () => {}, images, disabled: false }),
  );

describe("where a desktop runs", () => {
  it("offers the enclosure first (the default) and both full VMs, the emulated one said to be slow", () => {
    expect(RUNS_IN.map((r) => r.value)).toEqual(["enclosure", "fullvm-kvm", "fullvm-tcg"]);
    expect(RUNS_IN.map((r) => r.label)).toEqual(["Enclosure", "Full VM (KVM)", "Full VM (emulated, slow)"]);
  });

  it("asks rig.open for a backend only for a VM, and for an image only when one was picked", () => {
    expect(desktopArgs("enclosure", "")).toEqual({});
    expect(desktopArgs("enclosure", "img-k1")).toEqual({}); // a stale pick never goes with the enclosure
    expect(desktopArgs("fullvm-kvm", "")).toEqual({ backend: "fullvm-kvm" });
    expect(desktopArgs("fullvm-tcg", "img-t1")).toEqual({ backend: "fullvm-tcg", imageId: "img-t1" });
  });

  it("lists for a backend only the images checked under it, newest first as listed", () => {
    expect(imagesFor(IMAGES, "fullvm-kvm").map((i) => i.imageId)).toEqual(["img-k2", "img-k1"]);
    expect(imagesFor(IMAGES, "fullvm-tcg").map((i) => i.imageId)).toEqual(["img-t1"]);
    expect(imagesFor(IMAGES, "enclosure")).toEqual([]);
  });

  it("shows no image choice for the enclosure", () => {
    const html = render("enclosure", IMAGES);
    expect(html).toContain("Runs in");
    expect(html).not.toContain("Image");
    expect(html).not.toContain("newest");
  });

  it("shows the server owner the images of the chosen backend, the newest by default", () => {
    const html = render("fullvm-kvm", IMAGES);
    expect(html).toContain('<option value="" selected="">The newest imported</option>');
    expect(html).toContain('value="img-k2"');
    expect(html).toContain('value="img-k1"');
    expect(html).not.toContain('value="img-t1"');
    expect(render("fullvm-tcg", IMAGES, "img-t1")).toContain('<option value="img-t1" selected="">');
  });

  it("tells the server owner when no image is imported for the backend", () => {
    expect(render("fullvm-tcg", [image("img-k1", "fullvm-kvm")])).toContain(
      "No image is imported for Full VM (emulated, slow) yet",
    );
  });

  it("tells anyone else that the server boots the newest image, with no list", () => {
    const html = render("fullvm-kvm", null);
    expect(html).not.toContain("<option value=\"\"");
    expect(html).toContain("The server boots the newest image the server owner imported for Full VM (KVM).");
  });
});
