/**
 * A code block (```...```), an inline code span (`...`, ``...``: a run of backticks closed by a run
 * of the same length), or a backslash and the character it escapes (`\``: a literal backtick that
 * opens nothing). Only the first two are code.
 */
const CODE_OR_ESCAPE = /\\[\s\S]|```[\s\S]+?```|(`+)(?!`)[\s\S]*?[^`]\1(?!`)/g;

/**
 * The text of a message without its code: code blocks and inline code spans, as Discord's markdown
 * reads them, each become a space. What is written as code is shown as written: a link there is not
 * embedded and a mention there notifies nobody, so links and mentions are looked for in this text.
 */
export function withoutCode(content: string): string {
  return content.replace(CODE_OR_ESCAPE, (match) => (match.startsWith('\\') ? match : ' '));
}
