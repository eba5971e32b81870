// MSLText.swift -- MSL source as the CPU device reads it: tokens (comments and preprocessor lines
// skipped), the source with its tokens and line positions and the helpers every pass over it shares, and
// string helpers (no Foundation on Linux).

// MARK: - Tokens

/// A token of MSL source as a byte range.
struct Token {
    /// What kind of token.
    enum Kind { case identifier, number, punctuation, literal }
    /// Its kind.
    let kind: Kind
    /// Byte offset of its first byte.
    let start: Int
    /// Byte offset one past its last byte.
    let end: Int
}

/// Splits C++ source into tokens, skipping comments and preprocessor lines.
func tokenize(_ s: [UInt8]) -> [Token] {
    var out = [Token]()
    out.reserveCapacity(s.count / 3)
    var i = 0
    var lineStart = true
    let n = s.count
    func isIdentStart(_ c: UInt8) -> Bool { (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c == 95 }
    func isIdent(_ c: UInt8) -> Bool { isIdentStart(c) || (c >= 48 && c <= 57) }
    while i < n {
        let c = s[i]
        if c == 10 { lineStart = true; i += 1; continue }
        if c == 32 || c == 9 || c == 13 || c == 12 || c == 11 { i += 1; continue }
        if c == 35 && lineStart { // '#': preprocessor line, with continuations
            while i < n && s[i] != 10 {
                if s[i] == 92 && i + 1 < n && s[i + 1] == 10 { i += 2; continue }
                if s[i] == 47 && i + 1 < n && s[i + 1] == 42 { // block comment inside a directive
                    i += 2
                    while i + 1 < n && !(s[i] == 42 && s[i + 1] == 47) { i += 1 }
                    i += 2
                    continue
                }
                i += 1
            }
            continue
        }
        lineStart = false
        if c == 47 && i + 1 < n && s[i + 1] == 47 { while i < n && s[i] != 10 { i += 1 }; continue }
        if c == 47 && i + 1 < n && s[i + 1] == 42 {
            i += 2
            while i + 1 < n && !(s[i] == 42 && s[i + 1] == 47) { i += 1 }
            i = min(n, i + 2)
            continue
        }
        if isIdentStart(c) {
            let b = i
            while i < n && isIdent(s[i]) { i += 1 }
            out.append(Token(kind: .identifier, start: b, end: i))
            continue
        }
        if c >= 48 && c <= 57 || (c == 46 && i + 1 < n && s[i + 1] >= 48 && s[i + 1] <= 57) {
            let b = i
            while i < n && (isIdent(s[i]) || s[i] == 46 || ((s[i] == 43 || s[i] == 45) && (s[i - 1] == 101 || s[i - 1] == 69 || s[i - 1] == 112 || s[i - 1] == 80))) { i += 1 }
            out.append(Token(kind: .number, start: b, end: i))
            continue
        }
        if c == 34 || c == 39 {
            let b = i
            i += 1
            while i < n && s[i] != c && s[i] != 10 { if s[i] == 92 { i += 1 }; i += 1 }
            i = min(n, i + 1)
            out.append(Token(kind: .literal, start: b, end: i))
            continue
        }
        out.append(Token(kind: .punctuation, start: i, end: i + 1))
        i += 1
    }
    return out
}

// MARK: - Source text

/// An MSL source as bytes and tokens, with the helpers the reader's passes share.
struct MSLText {
    /// The source's bytes.
    let bytes: [UInt8]
    /// Its tokens.
    let toks: [Token]
    /// Byte offsets at which lines start.
    let lineStarts: [Int]
    /// The file name diagnostics use.
    let fileName: String

    /// Tokenizes a source.
    init(_ source: String, fileName: String) {
        bytes = Array(source.utf8)
        toks = tokenize(bytes)
        var starts = [0]
        for (i, c) in bytes.enumerated() where c == 10 { starts.append(i + 1) }
        lineStarts = starts
        self.fileName = fileName
    }

    /// The text of token i.
    func text(_ i: Int) -> Substring { Substring(decoding: bytes[toks[i].start..<toks[i].end], as: UTF8.self) }
    /// The text of a byte range.
    func text(_ a: Int, _ b: Int) -> String { String(decoding: bytes[a..<b], as: UTF8.self) }
    /// Whether token i is the punctuation character c.
    func isPunct(_ i: Int, _ c: UInt8) -> Bool { i >= 0 && i < toks.count && toks[i].kind == .punctuation && bytes[toks[i].start] == c }
    /// Whether token i is the identifier (or keyword) w.
    func isWord(_ i: Int, _ w: String) -> Bool { i >= 0 && i < toks.count && toks[i].kind == .identifier && text(i) == w }
    /// Whether token i is an identifier.
    func isIdentifier(_ i: Int) -> Bool { i >= 0 && i < toks.count && toks[i].kind == .identifier }

    /// 1-based line and column of a byte offset.
    func position(_ offset: Int) -> (Int, Int) {
        var lo = 0, hi = lineStarts.count - 1
        while lo < hi { let mid = (lo + hi + 1) / 2; if lineStarts[mid] <= offset { lo = mid } else { hi = mid - 1 } }
        return (lo + 1, offset - lineStarts[lo] + 1)
    }

    /// NM_ERR_COMPILE with a Metal-like "file:line:col: error: message".
    func failure(_ offset: Int, _ message: String) -> RuntimeError {
        let (l, c) = position(offset)
        return RuntimeError.compile("\(fileName):\(l):\(c): error: \(message)")
    }

    /// The same at token i.
    func failure(at i: Int, _ message: String) -> RuntimeError { failure(toks[i].start, message) }

    /// The index of the token closing the bracket opened at `open` (o and c are the bracket characters).
    func matching(_ open: Int, _ o: UInt8, _ c: UInt8) -> Int? {
        var depth = 0
        var i = open
        while i < toks.count {
            if isPunct(i, o) { depth += 1 } else if isPunct(i, c) { depth -= 1; if depth == 0 { return i } }
            i += 1
        }
        return nil
    }

    /// Attribute lists `[[ ... ]]` as (token of the first '[', token of the last ']').
    func attributeLists() -> [(open: Int, close: Int)] {
        var attributes: [(open: Int, close: Int)] = []
        var i = 0
        while i + 1 < toks.count {
            if isPunct(i, 91) && isPunct(i + 1, 91) && toks[i + 1].start == toks[i].end {
                var j = i + 2
                var depth = 0
                while j + 1 < toks.count {
                    if isPunct(j, 91) { depth += 1 } else if isPunct(j, 93) {
                        if depth == 0 && isPunct(j + 1, 93) { break }
                        depth -= 1
                    }
                    j += 1
                }
                attributes.append((i, j + 1))
                i = j + 2
                continue
            }
            i += 1
        }
        return attributes
    }
}
// MARK: - String helpers

extension String {
    /// The string without leading and trailing spaces, tabs and newlines.
    func trimmingSpaces() -> String {
        let u = Array(utf8)
        var a = 0, b = u.count
        while a < b && (u[a] == 32 || u[a] == 9 || u[a] == 10 || u[a] == 13) { a += 1 }
        while b > a && (u[b - 1] == 32 || u[b - 1] == 9 || u[b - 1] == 10 || u[b - 1] == 13) { b -= 1 }
        return String(decoding: u[a..<b], as: UTF8.self)
    }

    /// Every occurrence of target replaced by replacement (no Foundation on Linux).
    func replacingAll(_ target: String, with replacement: String) -> String {
        let t = Array(target.utf8), u = Array(utf8)
        guard !t.isEmpty, u.count >= t.count else { return self }
        var out = [UInt8]()
        out.reserveCapacity(u.count)
        var i = 0
        while i < u.count {
            if i + t.count <= u.count && Array(u[i..<(i + t.count)]) == t {
                out.append(contentsOf: replacement.utf8)
                i += t.count
            } else {
                out.append(u[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
