// Mistakes a frontend could make with the generated notes client, each a compile error:
// `tsc --strict` must report one on the line after each `@ts-expect-error` (the notes tests
// check both that it does and that nothing else fails).
import { createClient, type NotesGetErrorKind } from "./index.js";

const client = createClient({ baseUrl: "http://127.0.0.1:9/api" });

export async function mistakes(): Promise<void> {
  // @ts-expect-error: `title` is required
  await client.notes.create({ body: "no title" });
  // @ts-expect-error: a misspelt (or renamed) field
  await client.notes.create({ titel: "milk" });
  // @ts-expect-error: an id is a number
  await client.notes.get({ id: "7" });
  // @ts-expect-error: there is no such operation
  await client.notes.fetch({ id: 7 });
  // @ts-expect-error: a query needs its input
  await client.notes.get();
  const { data } = await client.notes.get({ id: 7 });
  // @ts-expect-error: a note has no `name`
  console.log(data.name);
  // @ts-expect-error: the author may be null or absent
  const author: string = data.author;
  // @ts-expect-error: `notes.get` does not declare CONFLICT
  const kind: NotesGetErrorKind = "CONFLICT";
  // @ts-expect-error: a subscription is iterated, not awaited
  const items: number = await client.notes.feed({ after: 0, limit: 1 });
  // @ts-expect-error: a query is awaited, not iterated
  for await (const item of client.notes.get({ id: 7 })) console.log(item);
  console.log(author, kind, items);
}
