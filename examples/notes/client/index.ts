// The TypeScript client of an opkit registry, written by
// opkit_adapters::client::typescript from the operations' schemas. Do not edit it:
// write it again when the operations change.
/* eslint-disable */

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

// ----- the operations' types ----------------------------------------------------------------

/** Input of `notes.create`. */
export type NotesCreateInput = NewNote;
/** Output of `notes.create`. */
export type NotesCreateOutput = Note;
/** The error kinds `notes.create` declares (documentation: others may still arrive). */
export type NotesCreateErrorKind = "CONFLICT" | "UNPROCESSABLE";

/** Input of `notes.delete`. */
export type NotesDeleteInput = {
  /** (an integer, at most 9223372036854775807) */
  id: number;
};
/** Output of `notes.delete`. */
export type NotesDeleteOutput = null;
/** The error kinds `notes.delete` declares (documentation: others may still arrive). */
export type NotesDeleteErrorKind = "NOT_FOUND" | "CONFLICT";

/** Input of `notes.export`. */
export type NotesExportInput = {
  [key: string]: unknown;
};
/** Output of `notes.export`. */
export type NotesExportOutput = Array<Note>;
/** The error kinds `notes.export` declares (documentation: others may still arrive). */
export type NotesExportErrorKind = "RATE_LIMITED";

/** Input of `notes.feed`. */
export type NotesFeedInput = {
  /** (an integer, at most 9223372036854775807) */
  after: number;
  /** (an integer, at least 0, at most 18446744073709551615) */
  idle_ms?: (number | null);
  /** (an integer, at least 0, at most 4294967295) */
  limit: number;
};
/** An item of `notes.feed`. */
export type NotesFeedItem = Note;
/** The error kinds `notes.feed` declares (documentation: others may still arrive). */
export type NotesFeedErrorKind = never;

/** Input of `notes.get`. */
export type NotesGetInput = {
  /** (an integer, at most 9223372036854775807) */
  id: number;
};
/** Output of `notes.get`. */
export type NotesGetOutput = Note;
/** The error kinds `notes.get` declares (documentation: others may still arrive). */
export type NotesGetErrorKind = "NOT_FOUND";

/** Input of `notes.ids`. */
export type NotesIdsInput = {
  value: string;
};
/** Output of `notes.ids`. */
export type NotesIdsOutput = Array<string>;
/** The error kinds `notes.ids` declares (documentation: others may still arrive). */
export type NotesIdsErrorKind = never;

/** Input of `notes.list`. */
export type NotesListInput = {
  /**
   * Only notes with a greater id.
   * (an integer, at most 9223372036854775807)
   */
  after?: (number | null);
  /**
   * At most this many (default 100).
   * (an integer, at least 0, at most 4294967295)
   */
  limit?: (number | null);
};
/** Output of `notes.list`. */
export type NotesListOutput = Array<Note>;
/** The error kinds `notes.list` declares (documentation: others may still arrive). */
export type NotesListErrorKind = never;

/** Input of `notes.mine`. */
export type NotesMineInput = {
  [key: string]: unknown;
};
/** Output of `notes.mine`. */
export type NotesMineOutput = Array<Note>;
/** The error kinds `notes.mine` declares (documentation: others may still arrive). */
export type NotesMineErrorKind = "UNAUTHENTICATED";

/** Input of `notes.read`. */
export type NotesReadInput = {
  /** (an integer, at most 9223372036854775807) */
  id: number;
};
/** Output of `notes.read`. */
export type NotesReadOutput = Note;
/** The error kinds `notes.read` declares (documentation: others may still arrive). */
export type NotesReadErrorKind = "NOT_FOUND";

/** Input of `notes.rename`. */
export type NotesRenameInput = {
  /** (an integer, at most 9223372036854775807) */
  id: number;
  title: string;
};
/** Output of `notes.rename`. */
export type NotesRenameOutput = Note;
/** The error kinds `notes.rename` declares (documentation: others may still arrive). */
export type NotesRenameErrorKind = "NOT_FOUND" | "CONFLICT" | "UNPROCESSABLE";

/** Input of `notes.summarize`. */
export type NotesSummarizeInput = {
  /**
   * How many words the summary may have (default 100).
   * (an integer, at least 0, at most 4294967295)
   */
  words?: (number | null);
};
/** Output of `notes.summarize`. */
export type NotesSummarizeOutput = Array<PromptMessage>;
/** The error kinds `notes.summarize` declares (documentation: others may still arrive). */
export type NotesSummarizeErrorKind = never;

/** Input of `notes.summary`. */
export type NotesSummaryInput = {
  [key: string]: unknown;
};
/** Output of `notes.summary`. */
export type NotesSummaryOutput = Summary;
/** The error kinds `notes.summary` declares (documentation: others may still arrive). */
export type NotesSummaryErrorKind = never;

// ----- named types (the schemas' definitions) ------------------------------------------------

/** Hints about who a block is for and how much it matters. */
export type Annotations = {
  /** Who the block is meant for. */
  audience?: (Array<Role> | null);
  /** When the underlying data last changed (ISO 8601). */
  lastModified?: (string | null);
  /** How important the block is, from 0 (optional) to 1 (required). */
  priority?: (number | null);
};

/** The contents of an embedded resource: `text` or base64 `blob`. */
export type EmbeddedResource = {
  /** Base64 binary contents. */
  blob?: (string | null);
  /** The resource's media type. */
  mimeType?: (string | null);
  /** Text contents. */
  text?: (string | null);
  /** The resource's URI. */
  uri: string;
};

/** Meta of an HTTP response. */
export type HttpMeta = {
  /** The response's `Content-Type` (with its parameters), `""` when the response had none. */
  contentType: string;
  /** Response headers, names lower-cased, multiple values joined with `", "`. */
  headers: {
    [key: string]: string;
  };
  /**
   * For one event of a Server-Sent Events stream: its type, id and retry. Absent
   * otherwise, and omitted from the wire when absent, so peers that do not know it read
   * the envelope as before.
   */
  sse?: (SseEventMeta | null);
  /**
   * The HTTP status code.
   * (an integer, at least 0, at most 65535)
   */
  statusCode: number;
};

/** Meta of a locally produced result. */
export type LocalMeta = {
  /** The id (`namespace.name`) of the operation that produced the data. */
  operationId: string;
  /**
   * When the result was wrapped, in milliseconds since the Unix epoch.
   * (an integer, at least 0, at most 18446744073709551615)
   */
  timestamp: number;
};

/** One content block of an MCP tool result. Tagged by `type`. */
export type McpContentBlock = ({
  /** Hints for the client. */
  annotations?: (Annotations | null);
  /** The text. */
  text: string;
  type: "text";
} | {
  /** Hints for the client. */
  annotations?: (Annotations | null);
  /** Base64 image bytes. */
  data: string;
  /** The image's media type, e.g. `image/png`. */
  mimeType: string;
  type: "image";
} | {
  /** Hints for the client. */
  annotations?: (Annotations | null);
  /** Base64 audio bytes. */
  data: string;
  /** The audio's media type, e.g. `audio/wav`. */
  mimeType: string;
  type: "audio";
} | {
  /** Hints for the client. */
  annotations?: (Annotations | null);
  /** The resource's contents. */
  resource: EmbeddedResource;
  type: "resource";
} | {
  /** What the resource is. */
  description?: (string | null);
  /** The resource's media type. */
  mimeType?: (string | null);
  /** The resource's name. */
  name: string;
  type: "resource_link";
  /** The resource's URI. */
  uri: string;
});

/**
 * Meta of an MCP tool result. An operation served over MCP that returns an envelope with
 * this meta answers with its content blocks as they are (`McpMeta::text` makes a
 * plain-text one).
 */
export type McpMeta = {
  /** The result's `_meta` object. */
  _meta?: unknown;
  /** Every content block of the result, in order. */
  content?: Array<McpContentBlock>;
  /** `true` when the tool reported a failure (`isError: true`); such results are still envelopes. */
  isError?: boolean;
  /** The tool's structured result, any JSON value. */
  structuredContent?: unknown;
};

/** What a new note holds. */
export type NewNote = {
  /** The text. */
  body?: string;
  /** The title, unique among notes; not blank. */
  title: string;
};

/** A stored note. */
export type Note = {
  /** The id of the identity that wrote it, when the call had one. */
  author?: (string | null);
  /** Its text. */
  body: string;
  /**
   * The note's id, given by the database.
   * (an integer, at most 9223372036854775807)
   */
  id: number;
  /** The replica (process) that stored it. */
  stored_by: string;
  /** Its title, unique among notes. */
  title: string;
};

/**
 * One message of an MCP prompt: who says it and what. A prompt operation
 * (`#[operation(mcp(prompt))]`, served by `opkit_adapters::mcp_server`) returns a
 * `Vec<PromptMessage>` (or a `String`, served as one user message).
 */
export type PromptMessage = {
  /** What is said. */
  content: McpContentBlock;
  /** Who says it. */
  role: Role;
};

/** Where a result came from. Serialized with a `source` tag: `"local"`, `"http"` or `"mcp"`. */
export type ResponseMeta = (LocalMeta & {
  source: "local";
} | HttpMeta & {
  source: "http";
} | McpMeta & {
  source: "mcp";
});

/** A party of an MCP conversation. */
export type Role = ("user" | "assistant");

/** The Server-Sent Events fields of one event, as an `EventSource` exposes them. */
export type SseEventMeta = {
  /** The event type (`message` when the stream named none). */
  event: string;
  /**
   * The last event id when the event was dispatched (sticky across events; absent when
   * the stream set none).
   */
  id?: (string | null);
  /**
   * The reconnection time the stream set last, in milliseconds.
   * (an integer, at least 0, at most 18446744073709551615)
   */
  retry?: (number | null);
};

/** How many notes there are and their titles, counted through a nested call to `notes.list`. */
export type Summary = {
  /**
   * How many notes there are.
   * (an integer, at least 0, at most 18446744073709551615)
   */
  count: number;
  /** Their titles, oldest first. */
  titles: Array<string>;
};


// ----- the client ---------------------------------------------------------------------------

/** The registry's operations, by namespace. */
export interface Client {
  notes: {
    /**
     * Stores a new note. A title that is taken is a conflict; a blank one cannot be stored.
     * @throws {OpkitError} with `kind` CONFLICT, UNPROCESSABLE (declared).
     * `POST /ops/notes.create`
     */
    create(input: NotesCreateInput, options?: CallOptions): Promise<Envelope<NotesCreateOutput>>;
    /**
     * Deletes a note (administrators only). Over MCP the user is asked to confirm first; a
     * caller through an edge that cannot ask (HTTP, the call protocol, an MCP client without
     * the elicitation capability) has chosen to delete by calling.
     * @throws {OpkitError} with `kind` NOT_FOUND, CONFLICT (declared).
     * Needs the scopes notes:admin.
     * `POST /ops/notes.delete`
     */
    delete(input: NotesDeleteInput, options?: CallOptions): Promise<Envelope<NotesDeleteOutput>>;
    /**
     * Every note, at most once a minute per caller.
     * @throws {OpkitError} with `kind` RATE_LIMITED (declared).
     * `POST /ops/notes.export`
     */
    export(input?: NotesExportInput, options?: CallOptions): Promise<Envelope<NotesExportOutput>>;
    /**
     * Notes written after `after`, as they arrive: the existing ones first, then new ones,
     * until `limit` notes were sent or none arrived for `idle_ms` (default 2000).
     * `POST /ops/notes.feed`
     */
    feed(input: NotesFeedInput, options?: CallOptions): AsyncIterable<Envelope<NotesFeedItem>>;
    /**
     * The note with this id.
     * @throws {OpkitError} with `kind` NOT_FOUND (declared).
     * `POST /ops/notes.get`
     */
    get(input: NotesGetInput, options?: CallOptions): Promise<Envelope<NotesGetOutput>>;
    /**
     * The ids of the notes that start with `value` (at most 100, newest first): what a client
     * offers while the user types the `{id}` of `notes://{id}`.
     * `POST /ops/notes.ids`
     */
    ids(input: NotesIdsInput, options?: CallOptions): Promise<Envelope<NotesIdsOutput>>;
    /**
     * Notes in the order they were written.
     * `POST /ops/notes.list`
     */
    list(input?: NotesListInput, options?: CallOptions): Promise<Envelope<NotesListOutput>>;
    /**
     * The caller's own notes; the caller must be known.
     * @throws {OpkitError} with `kind` UNAUTHENTICATED (declared).
     * `POST /ops/notes.mine`
     */
    mine(input?: NotesMineInput, options?: CallOptions): Promise<Envelope<NotesMineOutput>>;
    /**
     * The note at `notes://{id}`, as an MCP resource (its JSON); a client completes `{id}` with
     * the ids of the notes there are.
     * @throws {OpkitError} with `kind` NOT_FOUND (declared).
     * `POST /ops/notes.read`
     */
    read(input: NotesReadInput, options?: CallOptions): Promise<Envelope<NotesReadOutput>>;
    /**
     * Gives a note a new title.
     * @throws {OpkitError} with `kind` NOT_FOUND, CONFLICT, UNPROCESSABLE (declared).
     * `POST /ops/notes.rename`
     */
    rename(input: NotesRenameInput, options?: CallOptions): Promise<Envelope<NotesRenameOutput>>;
    /**
     * Summarize my notes: a prompt holding every note (at most 200), for the model to summarize.
     * `POST /ops/notes.summarize`
     */
    summarize(input?: NotesSummarizeInput, options?: CallOptions): Promise<Envelope<NotesSummarizeOutput>>;
    /**
     * A summary of the notes, made from a nested call to `notes.list`.
     * `POST /ops/notes.summary`
     */
    summary(input?: NotesSummaryInput, options?: CallOptions): Promise<Envelope<NotesSummaryOutput>>;
  };
}

/** A client of the registry served at `options.baseUrl`. */
export function createClient(options: ClientOptions): Client {
  const caller = new Caller(options);
  return {
    notes: {
      create: (input: NotesCreateInput, options?: CallOptions) => caller.call<NotesCreateOutput>("notes.create", input, options),
      delete: (input: NotesDeleteInput, options?: CallOptions) => caller.call<NotesDeleteOutput>("notes.delete", input, options),
      export: (input?: NotesExportInput, options?: CallOptions) => caller.call<NotesExportOutput>("notes.export", input, options),
      feed: (input: NotesFeedInput, options?: CallOptions) => caller.subscribe<NotesFeedItem>("notes.feed", input, options),
      get: (input: NotesGetInput, options?: CallOptions) => caller.call<NotesGetOutput>("notes.get", input, options),
      ids: (input: NotesIdsInput, options?: CallOptions) => caller.call<NotesIdsOutput>("notes.ids", input, options),
      list: (input?: NotesListInput, options?: CallOptions) => caller.call<NotesListOutput>("notes.list", input, options),
      mine: (input?: NotesMineInput, options?: CallOptions) => caller.call<NotesMineOutput>("notes.mine", input, options),
      read: (input: NotesReadInput, options?: CallOptions) => caller.call<NotesReadOutput>("notes.read", input, options),
      rename: (input: NotesRenameInput, options?: CallOptions) => caller.call<NotesRenameOutput>("notes.rename", input, options),
      summarize: (input?: NotesSummarizeInput, options?: CallOptions) => caller.call<NotesSummarizeOutput>("notes.summarize", input, options),
      summary: (input?: NotesSummaryInput, options?: CallOptions) => caller.call<NotesSummaryOutput>("notes.summary", input, options),
    },
  };
}

/** Every operation by id: its kind, input, output (a subscription's item) and declared error kinds. */
export interface Operations {
  "notes.create": { kind: "mutation"; input: NotesCreateInput; output: NotesCreateOutput; errors: NotesCreateErrorKind };
  "notes.delete": { kind: "mutation"; input: NotesDeleteInput; output: NotesDeleteOutput; errors: NotesDeleteErrorKind };
  "notes.export": { kind: "query"; input: NotesExportInput; output: NotesExportOutput; errors: NotesExportErrorKind };
  "notes.feed": { kind: "subscription"; input: NotesFeedInput; output: NotesFeedItem; errors: NotesFeedErrorKind };
  "notes.get": { kind: "query"; input: NotesGetInput; output: NotesGetOutput; errors: NotesGetErrorKind };
  "notes.ids": { kind: "query"; input: NotesIdsInput; output: NotesIdsOutput; errors: NotesIdsErrorKind };
  "notes.list": { kind: "query"; input: NotesListInput; output: NotesListOutput; errors: NotesListErrorKind };
  "notes.mine": { kind: "query"; input: NotesMineInput; output: NotesMineOutput; errors: NotesMineErrorKind };
  "notes.read": { kind: "query"; input: NotesReadInput; output: NotesReadOutput; errors: NotesReadErrorKind };
  "notes.rename": { kind: "mutation"; input: NotesRenameInput; output: NotesRenameOutput; errors: NotesRenameErrorKind };
  "notes.summarize": { kind: "query"; input: NotesSummarizeInput; output: NotesSummarizeOutput; errors: NotesSummarizeErrorKind };
  "notes.summary": { kind: "query"; input: NotesSummaryInput; output: NotesSummaryOutput; errors: NotesSummaryErrorKind };
}

/** An operation's id. */
export type OperationId = keyof Operations;
