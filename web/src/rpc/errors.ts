import { ERROR_CODES } from "../generated/ops";

/** The error codes of the RPC socket, generated from the server's list (`unavailable` also marks a lost
 * connection). */
export { ERROR_CODES };

export type ErrorCode = (typeof ERROR_CODES)[number];

/** A refused call: `code` is one of the contract's codes; `message` is one sentence meant for people. */
export class RpcError extends Error {
  readonly code: ErrorCode;
  readonly field: string | undefined;

  constructor(code: ErrorCode, message: string, field?: string) {
    super(message);
    this.name = "RpcError";
    this.code = code;
    this.field = field;
  }

  /** An error body from the wire; an unknown code is kept as `internal` rather than trusted. */
  static fromWire(body: unknown): RpcError {
    const raw = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
    const code = ERROR_CODES.find((c) => c === raw["code"]) ?? "internal";
    const message = typeof raw["message"] === "string" ? raw["message"] : "the server gave no reason";
    const field = typeof raw["field"] === "string" ? raw["field"] : undefined;
    return new RpcError(code, message, field);
  }
}
