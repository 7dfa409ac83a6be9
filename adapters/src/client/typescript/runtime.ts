// ----- runtime: the same in every generated client ------------------------------------------

/** What kind of failure a call ended with: the wire's `code`. */
export type ErrorCode =
  | "OPERATION_NOT_FOUND"
  | "VALIDATION_ERROR"
  | "ACCESS_DENIED"
  | "EXECUTION_ERROR"
  | "TIMEOUT"
  | "ABORTED"
  | "TRANSPORT_ERROR";

/** What an application error means: the wire's `kind` (absent for the protocol's own errors). */
export type ErrorKind =
  | "NOT_FOUND"
  | "CONFLICT"
  | "UNPROCESSABLE"
  | "RATE_LIMITED"
  | "UNAUTHENTICATED"
  | "UNAVAILABLE";

/** One result: the operation's data and where it came from. */
export interface Envelope<T> {
  data: T;
  meta: ResponseMeta;
}

/** The codes of errors the server answers before the operation runs. */
const NOT_RUN: ReadonlySet<string> = new Set(["OPERATION_NOT_FOUND", "VALIDATION_ERROR", "ACCESS_DENIED"]);

/**
 * A failed call: the wire's `code`, `kind`, `message` and `details`, the HTTP status when the
 * server answered, and whether the operation may have run.
 */
export class OpkitError<K extends ErrorKind = ErrorKind> extends Error {
  /** What kind of failure this is. */
  readonly code: ErrorCode;
  /** What an application error means; `undefined` for the protocol's own errors. */
  readonly kind: K | undefined;
  /** Structured details (for `VALIDATION_ERROR`, the list of violations). */
  readonly details: unknown;
  /** The id of the operation called. */
  readonly operationId: string;
  /** The HTTP status of the answer; `undefined` when none arrived. */
  readonly status: number | undefined;
  /** The request id the server gave the call (`x-request-id`), when it answered. */
  readonly requestId: string | undefined;
  /** `false` only when the server said the operation did not start. */
  readonly mayHaveRun: boolean;

  constructor(fields: {
    code: ErrorCode;
    message: string;
    operationId: string;
    kind?: K;
    details?: unknown;
    status?: number;
    requestId?: string;
    cause?: unknown;
  }) {
    super(fields.message);
    this.name = "OpkitError";
    this.code = fields.code;
    this.kind = fields.kind;
    this.details = fields.details;
    this.operationId = fields.operationId;
    this.status = fields.status;
    this.requestId = fields.requestId;
    this.mayHaveRun = !NOT_RUN.has(fields.code);
    if (fields.cause !== undefined) {
      Object.defineProperty(this, "cause", { value: fields.cause, enumerable: false });
    }
  }
}

/** `true` when `error` is an [OpkitError] (of this module). */
export function isOpkitError(error: unknown): error is OpkitError {
  return error instanceof OpkitError;
}

/** Headers as `fetch` takes them, or a function that gives them for each call. */
export type HeadersOption = HeadersInit | (() => HeadersInit | Promise<HeadersInit>);

/** Where the registry is served and how to reach it. */
export interface ClientOptions {
  /** The URL the registry is mounted at: its operations are at `<baseUrl>/ops/<id>`. */
  baseUrl: string;
  /** Headers sent with every call (credentials, for example); a function is asked each time. */
  headers?: HeadersOption;
  /** The `fetch` to use; the global one by default. */
  fetch?: typeof fetch;
}

/** Options of one call. */
export interface CallOptions {
  /** Aborts the call (or ends the subscription). */
  signal?: AbortSignal;
  /** Headers of this call, over the client's. */
  headers?: HeadersInit;
}

class Caller {
  private readonly base: string;
  private readonly headers: HeadersOption | undefined;
  private readonly fetch: typeof fetch;

  constructor(options: ClientOptions) {
    this.base = options.baseUrl.replace(/\/+$/, "");
    this.headers = options.headers;
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** A query or mutation: one envelope. */
  async call<T>(id: string, input: unknown, options?: CallOptions): Promise<Envelope<T>> {
    const response = await this.send(id, input, options, "application/json");
    let body: unknown;
    try {
      body = await response.json();
    } catch (cause) {
      throw lost(id, response, cause, options?.signal);
    }
    if (!isEnvelope(body)) {
      throw new OpkitError({
        code: "TRANSPORT_ERROR",
        message: `the answer to ${id} is not an envelope ({ data, meta })`,
        operationId: id,
        status: response.status,
        requestId: response.headers.get("x-request-id") ?? undefined,
      });
    }
    return body as Envelope<T>;
  }

  /** A subscription: its envelopes as they come, over server-sent events. */
  subscribe<T>(id: string, input: unknown, options?: CallOptions): AsyncIterable<Envelope<T>> {
    return { [Symbol.asyncIterator]: () => this.events<T>(id, input, options) };
  }

  private async *events<T>(id: string, input: unknown, options?: CallOptions): AsyncGenerator<Envelope<T>> {
    // Ours, so that leaving the loop early (or an error) closes the stream.
    const controller = new AbortController();
    const outer = options?.signal;
    const forward = () => controller.abort(outer?.reason);
    if (outer?.aborted) forward();
    outer?.addEventListener("abort", forward);
    try {
      const response = await this.send(
        id,
        input,
        { ...options, signal: controller.signal },
        "text/event-stream",
      );
      const requestId = response.headers.get("x-request-id") ?? undefined;
      if (response.body === null) throw lost(id, response, undefined, controller.signal);
      const reader = response.body.getReader();
      const parser = new EventParser();
      for (;;) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (cause) {
          throw lost(id, response, cause, controller.signal);
        }
        const events = chunk.done ? parser.end() : parser.push(chunk.value);
        for (const event of events) {
          // An abort ends the stream at once, even with events already read.
          if (controller.signal.aborted) throw lost(id, response, outer?.reason, controller.signal);
          if (event.type === "complete") return;
          if (event.type === "error") throw fromWire(id, parse(id, event.data), response.status, requestId);
          if (event.type === "message") {
            const envelope = parse(id, event.data);
            if (!isEnvelope(envelope)) {
              throw new OpkitError({
                code: "TRANSPORT_ERROR",
                message: `an event of ${id} is not an envelope ({ data, meta })`,
                operationId: id,
                requestId,
              });
            }
            yield envelope as Envelope<T>;
          }
        }
        if (chunk.done) {
          throw new OpkitError({
            code: "TRANSPORT_ERROR",
            message: `the stream of ${id} ended before its complete event`,
            operationId: id,
            status: response.status,
            requestId,
          });
        }
      }
    } finally {
      outer?.removeEventListener("abort", forward);
      controller.abort();
    }
  }

  private async send(id: string, input: unknown, options: CallOptions | undefined, accept: string): Promise<Response> {
    const headers = new Headers(typeof this.headers === "function" ? await this.headers() : this.headers);
    new Headers(options?.headers).forEach((value, name) => headers.set(name, value));
    headers.set("content-type", "application/json");
    headers.set("accept", accept);
    let response: Response;
    try {
      response = await this.fetch(`${this.base}/ops/${encodeURIComponent(id)}`, {
        method: "POST",
        headers,
        body: JSON.stringify(input ?? {}),
        signal: options?.signal,
      });
    } catch (cause) {
      throw lost(id, undefined, cause, options?.signal);
    }
    if (!response.ok) {
      const requestId = response.headers.get("x-request-id") ?? undefined;
      let body: unknown;
      try {
        body = await response.json();
      } catch (cause) {
        throw new OpkitError({
          code: "TRANSPORT_ERROR",
          message: `${id} answered ${response.status} without an error body`,
          operationId: id,
          status: response.status,
          requestId,
          cause,
        });
      }
      throw fromWire(id, body, response.status, requestId);
    }
    return response;
  }
}

/** A call that lost its answer: aborted by its caller, or by the network. */
function lost(id: string, response: Response | undefined, cause: unknown, signal: AbortSignal | undefined): OpkitError {
  const aborted = signal?.aborted === true;
  return new OpkitError({
    code: aborted ? "ABORTED" : "TRANSPORT_ERROR",
    message: aborted
      ? `${id} was aborted by its caller`
      : `the answer to ${id} did not arrive: ${cause instanceof Error ? cause.message : String(cause)}`,
    operationId: id,
    status: response?.status,
    requestId: response?.headers.get("x-request-id") ?? undefined,
    cause,
  });
}

/** An error the server sent: `{ code, message, details?, kind? }`. */
function fromWire(id: string, body: unknown, status: number, requestId: string | undefined): OpkitError {
  const wire = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
  const known = typeof wire.code === "string" && typeof wire.message === "string";
  return new OpkitError({
    code: known ? (wire.code as ErrorCode) : "TRANSPORT_ERROR",
    message: known ? (wire.message as string) : `${id} answered ${status} with an unknown error body`,
    kind: typeof wire.kind === "string" ? (wire.kind as ErrorKind) : undefined,
    details: known ? wire.details : body,
    operationId: id,
    status,
    requestId,
  });
}

function parse(id: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new OpkitError({ code: "TRANSPORT_ERROR", message: `an event of ${id} is not JSON`, operationId: id, cause });
  }
}

function isEnvelope(value: unknown): boolean {
  return typeof value === "object" && value !== null && "data" in value && "meta" in value;
}

/** One server-sent event. */
interface ServerEvent {
  type: string;
  data: string;
}

/** Server-sent events from bytes, as the HTML standard reads them. */
class EventParser {
  private readonly decoder = new TextDecoder();
  private buffer = "";
  private type = "";
  private data: string[] = [];

  push(bytes: Uint8Array): ServerEvent[] {
    this.buffer += this.decoder.decode(bytes, { stream: true });
    return this.lines(false);
  }

  end(): ServerEvent[] {
    this.buffer += this.decoder.decode();
    return this.lines(true);
  }

  private lines(end: boolean): ServerEvent[] {
    const events: ServerEvent[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      // A lone `\r` at the end may be the first half of `\r\n`.
      if (match === null || (match[0] === "\r" && match.index === this.buffer.length - 1 && !end)) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      if (line === "") {
        if (this.data.length > 0) events.push({ type: this.type || "message", data: this.data.join("\n") });
        this.type = "";
        this.data = [];
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") this.type = value;
      else if (field === "data") this.data.push(value);
    }
    return events;
  }
}
