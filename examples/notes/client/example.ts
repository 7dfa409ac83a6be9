// A frontend's use of the generated notes client (`index.ts`, written by
// `notes export-client typescript client`). The notes tests compile it with `tsc --strict` and
// run it against a live `notes serve`; what it saw comes back as lines of text.
import { createClient, isOpkitError, type Note, type NotesGetErrorKind } from "./index.js";

/** Runs the walk-through against the notes service at `baseUrl` (its `/api`). */
export async function main(baseUrl: string, adminKey: string, readerKey: string): Promise<string[]> {
  const seen: string[] = [];
  const admin = createClient({ baseUrl, headers: { "x-api-key": adminKey } });
  const reader = createClient({ baseUrl, headers: () => ({ "x-api-key": readerKey }) });

  // A mutation and a query: the data is typed (`Note`), the meta says where it came from.
  const created = await admin.notes.create({ title: "milk", body: "2 litres" });
  const note: Note = created.data;
  seen.push(`created ${note.id} ${note.title} (${created.meta.source})`);
  const { data: got } = await admin.notes.get({ id: note.id });
  seen.push(`got ${got.id} ${got.title}: ${got.body}`);

  // A domain error, by its code and kind.
  try {
    await admin.notes.get({ id: 424242 });
    seen.push("missing note found?");
  } catch (error) {
    if (isOpkitError(error)) {
      const kind = error.kind as NotesGetErrorKind | undefined;
      seen.push(`get missing: ${error.code} ${kind} ${error.status} mayHaveRun=${error.mayHaveRun}`);
    } else {
      throw error;
    }
  }
  try {
    await admin.notes.create({ title: "milk" });
  } catch (error) {
    if (!isOpkitError(error)) throw error;
    seen.push(`create taken: ${error.code} ${error.kind} ${error.status}`);
  }

  // A call refused for access: the reader may not delete.
  try {
    await reader.notes.delete({ id: note.id });
  } catch (error) {
    if (!isOpkitError(error)) throw error;
    seen.push(`reader delete: ${error.code} ${error.status} mayHaveRun=${error.mayHaveRun}`);
  }

  // A subscription: the notes written after 0, as they come, until `limit`.
  await admin.notes.create({ title: "eggs" });
  const titles: string[] = [];
  for await (const { data, meta } of reader.notes.feed({ after: 0, limit: 2, idle_ms: 2000 })) {
    titles.push(`${data.title}@${meta.source}`);
  }
  seen.push(`feed: ${titles.join(", ")}`);

  // Leaving a subscription early closes it; an aborted one ends with ABORTED.
  for await (const { data } of reader.notes.feed({ after: 0, limit: 100, idle_ms: 60000 })) {
    seen.push(`first of feed: ${data.title}`);
    break;
  }
  const controller = new AbortController();
  try {
    for await (const { data } of reader.notes.feed({ after: 0, limit: 100, idle_ms: 60000 }, { signal: controller.signal })) {
      seen.push(`feed before abort: ${data.title}`);
      controller.abort();
    }
  } catch (error) {
    if (!isOpkitError(error)) throw error;
    seen.push(`aborted feed: ${error.code}`);
  }

  // An input the server refuses: the types would not allow it, so it is forced.
  try {
    await admin.notes.get({ id: "one" } as unknown as { id: number });
  } catch (error) {
    if (!isOpkitError(error)) throw error;
    seen.push(`bad input: ${error.code} ${error.status} mayHaveRun=${error.mayHaveRun}`);
  }

  // The input may be left out when nothing in it is required.
  const { data: all } = await reader.notes.list();
  seen.push(`list: ${all.map((each) => each.title).join(", ")}`);
  return seen;
}
