import type { ReactNode } from "react";
import type { RpcError } from "../rpc/errors";
import { Refusal } from "./Outcome";

/** A read list as a panel shows it: the refusal if the read failed, "Loading {noun}…" until it answers, the empty
 * text ("No {noun} yet." unless given) when it holds nothing, else a `ul.list` named for the noun ("Agents") with
 * one row per item. */
export function LoadedList<T>(props: {
  noun: string;
  items: readonly T[] | undefined;
  error: RpcError | null | undefined;
  empty?: ReactNode;
  row(item: T): ReactNode;
}) {
  const { noun, items, error } = props;
  return (
    <>
      <Refusal error={error} />
      {items === undefined ? (
        !error && <p aria-busy="true">Loading {noun}…</p>
      ) : items.length === 0 ? (
        <p>{props.empty ?? `No ${noun} yet.`}</p>
      ) : (
        <ul className="list" aria-label={noun.charAt(0).toUpperCase() + noun.slice(1)}>
          {items.map((item) => props.row(item))}
        </ul>
      )}
    </>
  );
}
