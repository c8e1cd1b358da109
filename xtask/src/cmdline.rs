//! The kernel command line: turning words into one line the kernel splits back into the same
//! words.
//!
//! The kernel splits its command line at spaces. A word may be written in double quotes, inside
//! which `\"` stands for `"` and `\\` for `\`, so a word can hold spaces, tabs and quotes. Words
//! before `init=PATH` are kernel options; every word after it is one argument of init.
//!
//! [`join`] writes each word as it is when it needs no quoting, and otherwise (empty, or containing
//! a space, tab, `"` or `\`) wraps it in quotes with `"` and `\` escaped.

/// Whether `word` must be quoted to survive the kernel's split.
fn needs_quotes(word: &str) -> bool {
    word.is_empty() || word.contains([' ', '\t', '"', '\\'])
}

/// `word` as it is written on the kernel command line.
pub fn quote(word: &str) -> String {
    if !needs_quotes(word) {
        return word.to_string();
    }
    let mut out = String::with_capacity(word.len() + 2);
    out.push('"');
    for c in word.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// The command line carrying `words`, each as one word.
pub fn join<S: AsRef<str>>(words: &[S]) -> Result<String, String> {
    let mut quoted = Vec::with_capacity(words.len());
    for w in words {
        let w = w.as_ref();
        if w.contains('\0') {
            return Err(format!(
                "command-line word {w:?} contains a NUL byte, which a command line cannot carry"
            ));
        }
        quoted.push(quote(w));
    }
    Ok(quoted.join(" "))
}

/// Splits a command line the way the kernel does (the contract [`join`] writes for); used by
/// the tests to check that every word comes back unchanged.
#[cfg(test)]
pub fn split(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek() == Some(&' ') {
            chars.next();
        }
        let Some(&first) = chars.peek() else {
            return Ok(words);
        };
        let mut word = String::new();
        if first == '"' {
            chars.next();
            loop {
                match chars.next() {
                    None => return Err(format!("unterminated quote in {line:?}")),
                    Some('"') => break,
                    Some('\\') => match chars.next() {
                        Some(c @ ('"' | '\\')) => word.push(c),
                        other => return Err(format!("bad escape \\{other:?} in {line:?}")),
                    },
                    Some(c) => word.push(c),
                }
            }
            if chars.peek().is_some_and(|&c| c != ' ') {
                return Err(format!("text right after a closing quote in {line:?}"));
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ' ' {
                    break;
                }
                word.push(c);
                chars.next();
            }
        }
        words.push(word);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_are_left_alone() {
        let words = ["init=/bin/busybox", "echo", "hello", "test=ipi", "poweroff"];
        assert_eq!(
            join(&words).unwrap(),
            "init=/bin/busybox echo hello test=ipi poweroff"
        );
    }

    #[test]
    fn words_with_spaces_and_quotes_are_quoted() {
        assert_eq!(quote("echo a; echo b"), r#""echo a; echo b""#);
        assert_eq!(quote(""), r#""""#);
        assert_eq!(quote(r#"say "hi""#), r#""say \"hi\"""#);
        assert_eq!(quote(r"back\slash"), r#""back\\slash""#);
        assert_eq!(quote("tab\there"), "\"tab\there\"");
        assert_eq!(quote("naïve"), "naïve");
    }

    #[test]
    fn every_word_comes_back_unchanged() {
        let words = [
            "init=/test/args",
            "hello world",
            r#"say "hi""#,
            r"back\slash",
            "",
            "tab\there",
            r#"""#,
            r"\",
            r#"a\"b"#,
            r"trailing\",
            "  two leading spaces",
            "poweroff",
            "init=/bin/false",
            "naïve",
        ];
        let line = join(&words).unwrap();
        assert_eq!(split(&line).unwrap(), words);
    }

    #[test]
    fn nul_bytes_are_refused() {
        let err = join(&["a\0b"]).unwrap_err();
        assert!(err.contains("NUL"), "{err}");
    }
}
