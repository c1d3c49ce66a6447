/** Where a desktop (a computer rig) runs, as `rig.open` takes it: the enclosure (the default), or a full VM under
 * QEMU from an image the server owner imported, with KVM or emulated (TCG, much slower). Pure, unit-tested. */
import type { ImageView } from "../../../generated/ops";

export type RunsIn = "enclosure" | "fullvm-kvm" | "fullvm-tcg";

export const RUNS_IN: readonly { value: RunsIn; label: string }[] = [
  { value: "enclosure", label: "Enclosure" },
  { value: "fullvm-kvm", label: "Full VM (KVM)" },
  { value: "fullvm-tcg", label: "Full VM (emulated, slow)" },
];

export const runsInLabel = (value: RunsIn): string => RUNS_IN.find((r) => r.value === value)?.label ?? value;

/** The images a full VM under `backend` may boot: those imported (and boot-checked) under it, newest first as
 * `rigs.images` lists them; the server refuses an image checked under the other accelerator. */
export function imagesFor(images: readonly ImageView[], backend: RunsIn): ImageView[] {
  return backend === "enclosure" ? [] : images.filter((i) => i.accelerator === backend);
}

export function imageLabel(image: ImageView): string {
  return `${image.name} (${image.imageId}, imported ${image.importedAt.slice(0, 10)})`;
}

export interface DesktopArgs {
  backend?: RunsIn;
  imageId?: string;
}

/** What `rig.open` of a computer rig adds for the choice: nothing for the enclosure (the server's default), the
 * backend for a VM, and the image only when one was picked (without it the server boots the newest). */
export function desktopArgs(runsIn: RunsIn, imageId: string): DesktopArgs {
  if (runsIn === "enclosure") return {};
  return imageId ? { backend: runsIn, imageId } : { backend: runsIn };
}
