/** Writes, and the one busy/error pattern of a change a person starts: `useWrite` calls an op and marks stale the
 * reads it changes (`invalidation.ts`); `useAction` runs one change at a time with its state (busy while it runs,
 * the server's words when refused, what it reported when it worked), shown by `components/Outcome`. */
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useCallback, useMemo } from "react";
import type { RpcClient } from "../rpc/client";
import type { RpcError } from "../rpc/errors";
import { useRpc } from "../rpc/hooks";
import { invalidateAfterWrite } from "./invalidation";
import { asRpcError } from "./queries";

/** A call through the data layer: `client.call`'s signature (a helper outside React, such as a rig lane's, takes
 * one from `useWrite`). */
export type Write = RpcClient["call"];

/** `client.call`, and after it worked, the reads it changed are fetched again (those on screen at once). A read
 * op made on demand (a check, a preview) goes through it too and changes nothing. */
export function useWrite(): Write {
  const client = useRpc();
  const queries = useQueryClient();
  return useMemo(() => {
    const write = async (op: Parameters<RpcClient["call"]>[0], args?: unknown) => {
      const call = client.call.bind(client) as (op: string, args?: unknown) => Promise<unknown>;
      const result = await call(op, args);
      void invalidateAfterWrite(queries, op, args);
      return result;
    };
    return write as Write;
  }, [client, queries]);
}

/** A change's state: running, the refusal it ended with, or what it reported when it worked. */
export interface Action {
  busy: boolean;
  error: RpcError | null;
  done: string | null;
  /** Runs one change; answers its result, or undefined when it was refused (the refusal is in `error`). `said`
   * is what to report when it worked (shown as a status). */
  run<T>(work: () => Promise<T>, said?: string | ((result: T) => string | null)): Promise<T | undefined>;
  /** Runs a change whose answer is what to report (null: nothing to say). */
  report(work: () => Promise<string | null>): Promise<void>;
  clear(): void;
}

export interface Job {
  work(): Promise<unknown>;
  said: string | ((result: unknown) => string | null) | undefined;
}

export interface Outcome {
  value: unknown;
  said: string | null;
}

/** The mutation behind every `useAction`: the work's result and what to say, or its refusal as an `RpcError`. */
export const ACTION = {
  mutationFn: async ({ work, said }: Job): Promise<Outcome> => {
    try {
      const value = await work();
      return { value, said: typeof said === "function" ? said(value) : (said ?? null) };
    } catch (e) {
      throw asRpcError(e);
    }
  },
};

export function useAction(): Action {
  const mutation = useMutation<Outcome, RpcError, Job>(ACTION);
  const { mutateAsync, reset } = mutation;
  const run = useCallback(
    async <T,>(work: () => Promise<T>, said?: string | ((result: T) => string | null)): Promise<T | undefined> => {
      try {
        const outcome = await mutateAsync({ work, said: said as Job["said"] });
        return outcome.value as T;
      } catch {
        return undefined; // the refusal is the mutation's error
      }
    },
    [mutateAsync],
  );
  const report = useCallback(
    async (work: () => Promise<string | null>) => void (await run(work, (said) => said)),
    [run],
  );
  return {
    busy: mutation.isPending,
    error: mutation.error,
    done: mutation.data?.said ?? null,
    run,
    report,
    clear: reset,
  };
}
