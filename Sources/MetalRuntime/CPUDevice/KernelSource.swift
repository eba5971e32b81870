// KernelSource.swift -- reading MSL for the CPU device: find a kernel's signature, refuse what Metal
// refuses (in the signature, and in the whole source what MSL forbids and the shim header cannot express:
// checkMetalRules), blank attribute lists (clang would misread [[threadgroup(0)]] through the address-space
// macro), rewrite threadgroup variables declared in kernel bodies into per-threadgroup storage, and
// generate the C++ entry glue appended after the MSL. Line numbers of the MSL are kept intact.

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

// MARK: - Kernel analysis

/// One kernel parameter as the CPU glue binds it.
struct KernelParameter: Equatable {
    /// How the glue supplies it.
    enum Binding: Equatable {
        /// `[[buffer(slot)]]`; reference = `T&` rather than `T*`.
        case buffer(slot: Int, reference: Bool)
        /// `[[threadgroup(slot)]]` dynamic threadgroup memory.
        case threadgroup(slot: Int)
        /// A built-in input such as thread_position_in_grid.
        case builtin(name: String)
    }
    /// The parameter name.
    let name: String
    /// Its declared type, whitespace-normalised (e.g. "device float*").
    let type: String
    /// How it is bound.
    let binding: Binding
}

/// Everything the CPU device needs to know about one kernel in an MSL source.
struct KernelAnalysis {
    /// The MSL with attribute lists blanked and threadgroup locals rewritten (same line numbers).
    let rewrittenSource: String
    /// The kernel's parameters in order.
    let parameters: [KernelParameter]
    /// Whether the source calls barriers or SIMD-group functions (then work-items run as fibers).
    let usesFibers: Bool
    /// Types (with array suffixes) of the threadgroup variables declared in the kernel's body.
    let staticThreadgroupTypes: [String]
    /// `[[max_total_threads_per_threadgroup(N)]]` when present.
    let maxTotalThreadsPerThreadgroup: UInt32?

    /// Bit i set when the kernel declares `[[buffer(i)]]`.
    var declaredBufferSlots: UInt32 {
        var m: UInt32 = 0
        for p in parameters { if case .buffer(let s, _) = p.binding { m |= 1 << UInt32(s) } }
        return m
    }

    /// Bit i set when the kernel declares `[[threadgroup(i)]]`.
    var declaredThreadgroupSlots: UInt32 {
        var m: UInt32 = 0
        for p in parameters { if case .threadgroup(let s) = p.binding { m |= 1 << UInt32(s) } }
        return m
    }
}

/// Built-in kernel inputs: the C++ expression the glue computes (in terms of the glue's locals) and
/// whether the attribute is positional (ushort/uint and their 2- and 3-vectors) or an index (ushort/uint).
let builtinInputs: [String: (expression: String, positional: Bool)] = [
    "thread_position_in_grid": ("uint3{__gx * __T0 + __lx, __gy * __T1 + __ly, __gz * __T2 + __lz}", true),
    "threads_per_grid": ("uint3{__G0 * __T0, __G1 * __T1, __G2 * __T2}", true),
    "grid_size": ("uint3{__G0 * __T0, __G1 * __T1, __G2 * __T2}", true),
    "grid_origin": ("uint3{0u, 0u, 0u}", true),
    "threadgroup_position_in_grid": ("uint3{__gx, __gy, __gz}", true),
    "threadgroups_per_grid": ("uint3{__G0, __G1, __G2}", true),
    "thread_position_in_threadgroup": ("uint3{__lx, __ly, __lz}", true),
    "threads_per_threadgroup": ("uint3{__T0, __T1, __T2}", true),
    "dispatch_threads_per_threadgroup": ("uint3{__T0, __T1, __T2}", true),
    "thread_index_in_threadgroup": ("__lin", false),
    "thread_index_in_simdgroup": ("(__lin & 31u)", false),
    "simdgroup_index_in_threadgroup": ("(__lin >> 5)", false),
    "threads_per_simdgroup": ("32u", false),
    "thread_execution_width": ("32u", false),
    "simdgroups_per_threadgroup": ("((__T0 * __T1 * __T2 + 31u) / 32u)", false),
    "dispatch_simdgroups_per_threadgroup": ("((__T0 * __T1 * __T2 + 31u) / 32u)", false),
]

/// Identifiers whose presence makes a source run its work-items as fibers.
private func isSynchronising(_ name: Substring) -> Bool {
    name == "threadgroup_barrier" || name == "simdgroup_barrier" || name.hasPrefix("simd_") || name.hasPrefix("quad_")
}

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

/// A parse of an MSL source for one kernel; throws NM_ERR_COMPILE with a Metal-like message naming the line.
/// The whole source is checked against what MSL forbids at `languageVersion` (see `checkMetalRules`), as
/// Apple's compiler compiles the whole library.
func analyzeKernel(source: String, kernelName: String, languageVersion: UInt32, fileName: String = "kernel.metal") throws -> KernelAnalysis {
    let src = MSLText(source, fileName: fileName)
    let s = src.bytes, toks = src.toks
    func text(_ t: Token) -> Substring { Substring(decoding: s[t.start..<t.end], as: UTF8.self) }
    func text(_ a: Int, _ b: Int) -> String { src.text(a, b) }
    func isPunct(_ i: Int, _ c: UInt8) -> Bool { src.isPunct(i, c) }
    func failure(_ offset: Int, _ message: String) -> RuntimeError { src.failure(offset, message) }
    func matching(_ open: Int, _ o: UInt8, _ c: UInt8) -> Int? { src.matching(open, o, c) }

    let attributes = src.attributeLists()
    var attributeAt: [Int: Int] = [:]
    for (n, a) in attributes.enumerated() { attributeAt[a.open] = n }
    func attributeText(_ a: (open: Int, close: Int)) -> String {
        a.close - 1 > a.open + 2 ? text(toks[a.open + 2].start, toks[a.close - 2].end) : ""
    }
    try checkMetalRules(src, attributes: attributes, languageVersion: languageVersion)

    // Kernels: `kernel void NAME (` or `[[kernel]] void NAME (`.
    var usesFibers = false
    var found: (nameTok: Int, open: Int, close: Int, attrs: [Int])? = nil
    var kernelNames: [String] = []
    for (k, t) in toks.enumerated() where t.kind == .identifier {
        let word = text(t)
        if isSynchronising(word) { usesFibers = true }
        var isKernel = false
        if word == "kernel" { isKernel = true }
        if word == "void", k >= 3, isPunct(k - 1, 93), let a = attributes.first(where: { $0.close == k - 1 }),
           attributeText(a).trimmingSpaces() == "kernel" { isKernel = true }
        guard isKernel else { continue }
        var v = k
        if word == "kernel" { v = k + 1 }
        guard v + 2 < toks.count, toks[v].kind == .identifier, text(toks[v]) == "void",
              toks[v + 1].kind == .identifier, isPunct(v + 2, 40) else { continue }
        let name = String(text(toks[v + 1]))
        kernelNames.append(name)
        if name == kernelName {
            guard let close = matching(v + 2, 40, 41) else { throw failure(toks[v + 2].start, "unbalanced parentheses in the parameters of kernel '\(name)'") }
            if found != nil { throw failure(toks[v + 1].start, "kernel '\(name)' is defined twice") }
            var attrs: [Int] = []
            var b = k - 1
            while b >= 0 && isPunct(b, 93), let a = attributes.firstIndex(where: { $0.close == b }) {
                attrs.append(a)
                b = attributes[a].open - 1
            }
            found = (v + 1, v + 2, close, attrs)
        }
    }
    guard let kernel = found else {
        let known = kernelNames.isEmpty ? "it declares no kernel functions" : "its kernels are: " + kernelNames.joined(separator: ", ")
        throw RuntimeError.compile("\(fileName): error: no kernel function named '\(kernelName)' in the MSL source; \(known)")
    }

    // Function attributes: max_total_threads_per_threadgroup(N).
    var maxThreads: UInt32? = nil
    for a in kernel.attrs {
        let t = attributeText(attributes[a]).filter { $0 != " " }
        if t.hasPrefix("max_total_threads_per_threadgroup("), let close = t.firstIndex(of: ")") {
            let num = t[t.index(t.startIndex, offsetBy: 34)..<close]
            if let v = UInt32(num) { maxThreads = v }
        }
    }

    // Parameters.
    var params: [KernelParameter] = []
    var usedBuffers: [Int: String] = [:]
    var usedThreadgroup: [Int: String] = [:]
    var p = kernel.open + 1
    while p < kernel.close {
        var end = p
        var depth = 0
        while end < kernel.close {
            if isPunct(end, 40) || isPunct(end, 91) || isPunct(end, 60) { depth += 1 }
            if isPunct(end, 41) || isPunct(end, 93) || isPunct(end, 62) { depth -= 1 }
            if depth == 0 && isPunct(end, 44) { break }
            end += 1
        }
        if end == p { p = end + 1; continue }
        // Tokens p..<end: type tokens, name, then optional [[attribute]].
        var attr: (open: Int, close: Int)? = nil
        var declEnd = end
        for q in p..<end { if let a = attributeAt[q] { attr = attributes[a]; declEnd = q; break } }
        let declTokens = Array(p..<declEnd)
        guard let nameIdx = declTokens.last, toks[nameIdx].kind == .identifier, declTokens.count >= 2 else {
            if declTokens.count == 1 && text(toks[declTokens[0]]) == "void" { p = end + 1; continue }
            throw failure(toks[p].start, "cannot read this kernel parameter of '\(kernelName)'; write it as 'TYPE NAME [[attribute]]'")
        }
        let name = String(text(toks[nameIdx]))
        let type = declTokens.dropLast().map { String(text(toks[$0])) }.joined(separator: " ")
            .replacingAll(" *", with: "*").replacingAll(" &", with: "&")
        let typeWords = Set(declTokens.dropLast().map { String(text(toks[$0])) })
        guard let a = attr else {
            throw failure(toks[nameIdx].start, "kernel parameter '\(name)' of '\(kernelName)' has no attribute; Metal requires "
                + "[[buffer(i)]], [[threadgroup(i)]] or a built-in input such as [[thread_position_in_grid]] on every kernel "
                + "parameter (pass scalars as 'constant T& \(name) [[buffer(i)]]')")
        }
        let spec = attributeText(a).filter { $0 != " " && $0 != "\t" && $0 != "\n" }
        let at = toks[a.open].start
        func index(_ prefix: String) throws -> Int {
            let inner = spec.dropFirst(prefix.count + 1).prefix { $0 != ")" }
            guard let v = Int(inner) else { throw failure(at, "cannot read the index in [[\(spec)]]") }
            return v
        }
        if spec.hasPrefix("buffer(") {
            let slot = try index("buffer")
            if slot < 0 || slot > 30 {
                throw failure(at, "buffer index \(slot) of kernel parameter '\(name)' is out of range; Metal's buffer indices "
                    + "must be between 0 and 30")
            }
            if let other = usedBuffers[slot] {
                throw failure(at, "kernel parameters '\(other)' and '\(name)' both use [[buffer(\(slot))]]; buffer indices must be unique")
            }
            usedBuffers[slot] = name
            // Qualifiers after the declarator (`device float* __restrict x`) do not change what it is.
            var core = type
            for q in [" const", " volatile", " __restrict", " __restrict__", " restrict"] where core.hasSuffix(q) {
                core = String(core.dropLast(q.count))
            }
            let isPointer = core.hasSuffix("*"), isReference = core.hasSuffix("&") && core == type
            guard (isPointer || isReference) && (typeWords.contains("device") || typeWords.contains("constant")) else {
                throw failure(toks[declTokens[0]].start, "invalid type '\(type)' for buffer declaration of kernel parameter '\(name)'; "
                    + "a [[buffer(i)]] parameter must be a device or constant pointer or reference (pass scalars as "
                    + "'constant \(type)& \(name) [[buffer(\(slot))]]')")
            }
            params.append(KernelParameter(name: name, type: type, binding: .buffer(slot: slot, reference: isReference)))
        } else if spec.hasPrefix("threadgroup(") {
            let slot = try index("threadgroup")
            if slot < 0 || slot > 30 {
                throw failure(at, "threadgroup index \(slot) of kernel parameter '\(name)' is out of range; it must be between 0 and 30")
            }
            if let other = usedThreadgroup[slot] {
                throw failure(at, "kernel parameters '\(other)' and '\(name)' both use [[threadgroup(\(slot))]]")
            }
            usedThreadgroup[slot] = name
            guard typeWords.contains("threadgroup") && type.hasSuffix("*") else {
                throw failure(toks[declTokens[0]].start, "invalid type '\(type)' for [[threadgroup(\(slot))]] parameter '\(name)'; "
                    + "it must be a threadgroup pointer such as 'threadgroup float*'")
            }
            params.append(KernelParameter(name: name, type: type, binding: .threadgroup(slot: slot)))
        } else if let builtin = builtinInputs[spec] {
            let allowed: Set<String> = builtin.positional ? ["uint", "ushort", "uint2", "ushort2", "uint3", "ushort3"] : ["uint", "ushort"]
            guard allowed.contains(type) else {
                throw failure(toks[declTokens[0]].start, "invalid type '\(type)' for input declaration '\(name)' [[\(spec)]]; "
                    + "Metal allows " + allowed.sorted().joined(separator: ", "))
            }
            params.append(KernelParameter(name: name, type: type, binding: .builtin(name: spec)))
        } else {
            throw failure(at, "attribute [[\(spec)]] on kernel parameter '\(name)' is not supported by numba-metal's runtime "
                + "(buffers, threadgroup memory and the compute built-in inputs are)")
        }
        p = end + 1
    }

    // The kernel body, for the threadgroup variables it declares.
    var bodyOpen = kernel.close + 1
    while bodyOpen < toks.count && !isPunct(bodyOpen, 123) && !isPunct(bodyOpen, 59) { bodyOpen += 1 }
    guard bodyOpen < toks.count, isPunct(bodyOpen, 123), let bodyClose = matching(bodyOpen, 123, 125) else {
        throw failure(toks[kernel.nameTok].start, "kernel '\(kernelName)' has no body")
    }

    // Edits: blank every attribute list; rewrite `threadgroup T name[...];` declared in function bodies.
    var edits: [(start: Int, end: Int, text: String)] = []
    for a in attributes {
        let b = toks[a.open].start, e = toks[a.close].end
        edits.append((b, e, String(decoding: s[b..<e].map { $0 == 10 ? 10 : 32 }, as: UTF8.self)))
    }
    var staticTypes: [String] = []
    var braceDepth = 0, parenDepth = 0
    var k = 0
    while k < toks.count {
        if isPunct(k, 123) { braceDepth += 1 } else if isPunct(k, 125) { braceDepth -= 1 }
        else if isPunct(k, 40) { parenDepth += 1 } else if isPunct(k, 41) { parenDepth -= 1 }
        if toks[k].kind == .identifier, braceDepth >= 1, parenDepth == 0, text(toks[k]) == "threadgroup",
           k > 0, isPunct(k - 1, 59) || isPunct(k - 1, 123) || isPunct(k - 1, 125) {
            var e = k + 1
            var bracket = 0
            var plain = true
            var firstBracket: Int? = nil
            while e < toks.count && !(isPunct(e, 59) && bracket == 0) {
                if isPunct(e, 91) { if bracket == 0 && firstBracket == nil { firstBracket = e }; bracket += 1 }
                else if isPunct(e, 93) { bracket -= 1 }
                else if bracket == 0 && (isPunct(e, 42) || isPunct(e, 38) || isPunct(e, 61) || isPunct(e, 44) || isPunct(e, 40) || isPunct(e, 123)) {
                    plain = false
                    break
                }
                e += 1
            }
            let nameTok = (firstBracket ?? e) - 1
            if plain, e < toks.count, nameTok > k + 1, toks[nameTok].kind == .identifier {
                let name = text(toks[nameTok])
                let type = text(toks[k + 1].start, toks[nameTok - 1].end)
                let suffix = firstBracket.map { text(toks[$0].start, toks[e - 1].end) } ?? ""
                let full = suffix.isEmpty ? type : type + " " + suffix
                let b = toks[k].start, end = toks[e].end
                let newlines = s[b..<end].filter { $0 == 10 }.count
                let replacement = "using __nm_tgT_\(name) = \(full); alignas(__nm_tgT_\(name)) static __thread threadgroup "
                    + "unsigned char __nm_tgS_\(name)[sizeof(__nm_tgT_\(name))]; threadgroup __nm_tgT_\(name)& \(name) = "
                    + "*(threadgroup __nm_tgT_\(name)*)__nm_tgS_\(name);" + String(repeating: "\n", count: newlines)
                edits.append((b, end, replacement))
                if k > bodyOpen && k < bodyClose { staticTypes.append(full) }
                k = e
            }
        }
        k += 1
    }
    edits.sort { $0.start < $1.start }
    var out = [UInt8]()
    out.reserveCapacity(s.count + 256)
    var cursor = 0
    for e in edits where e.start >= cursor {
        out.append(contentsOf: s[cursor..<e.start])
        out.append(contentsOf: Array(e.text.utf8))
        cursor = e.end
    }
    out.append(contentsOf: s[cursor...])
    return KernelAnalysis(rewrittenSource: String(decoding: out, as: UTF8.self), parameters: params, usesFibers: usesFibers,
                          staticThreadgroupTypes: staticTypes, maxTotalThreadsPerThreadgroup: maxThreads)
}

// MARK: - What Metal forbids

/// Words of C++ that MSL does not have, with what the diagnostic says (MSL specification §1.5.4).
private let forbiddenWords: [String: String] = [
    "goto": "goto statements are not allowed in Metal (MSL §1.5.4); write structured loops and conditions",
    "new": "the new operator is not available in Metal (MSL §1.5.4)",
    "delete": "the delete operator is not available in Metal (MSL §1.5.4)",
    "virtual": "virtual functions are not allowed in Metal (MSL §1.5.4)",
    "register": "the register storage class is not allowed in Metal (MSL §1.5.4)",
]

/// Scalar and vector type names, for telling overloads apart by their parameter types.
private let valueTypeNames: Set<String> = {
    var names: Set<String> = ["int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t"]
    for t in ["bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half", "float"] {
        names.insert(t)
        for n in 2...4 { names.insert("\(t)\(n)") }
    }
    return names
}()

/// A function defined in an MSL source, as the reader's rules see it.
struct MSLFunction {
    /// Its name ("operator" for operators).
    let name: String
    /// The token of its name.
    let nameToken: Int
    /// Whether it is a kernel (`kernel` or `[[kernel]]`).
    let isKernel: Bool
    /// Whether it is defined in a class body.
    let isMember: Bool
    /// The tokens of its body's braces.
    let bodyOpen: Int
    var bodyClose: Int
    /// Each parameter's type when it is a plain scalar or vector type ("" otherwise) and its name.
    let parameters: [(type: String, name: String)]
    /// Parameters without a default argument.
    let requiredParameters: Int
}

/// What a `{` opens.
private enum BraceScope { case namespace, classBody, function(Int), block, lambda, initializer }

/// Refuses, with a Metal-like diagnostic, what MSL forbids and a header cannot express: goto, new, delete,
/// virtual, register, `long long`, `long double`, derived classes, a function named main, static variables
/// in functions, threadgroup variables outside kernels, lambdas before MSL 3.2, function pointers,
/// recursion (direct or mutual) and calls to kernels. Token-based: it reads the structure of the source
/// (namespaces, classes, function bodies, blocks) and a call graph whose overloads are told apart by
/// arity and, where the arguments show them, by argument types.
@discardableResult
func checkMetalRules(_ t: MSLText, attributes: [(open: Int, close: Int)], languageVersion: UInt32) throws -> [MSLFunction] {
    let toks = t.toks
    let n = toks.count
    var inAttribute = [Bool](repeating: false, count: n)
    for a in attributes where a.close < n { for i in a.open...a.close { inAttribute[i] = true } }
    let versionText = "\(languageVersion / 100).\(languageVersion % 100 / 10)"

    var functions: [MSLFunction] = []
    var scopes: [(kind: BraceScope, statementStart: Int, parens: Int)] = [(.namespace, 0, 0)]
    var lambdaIntroducers = Set<Int>()
    var openParens: [Int] = []
    var openOf: [Int: Int] = [:]   // ')' -> its '('

    func enclosingFunction() -> Int? {
        for sc in scopes.reversed() { if case .function(let f) = sc.kind { return f } }
        return nil
    }
    /// Inside a function's code (not a class or namespace, not merely an initializer at program scope).
    func inCode() -> Bool {
        for sc in scopes.reversed() {
            switch sc.kind {
            case .function, .block, .lambda: return true
            case .initializer: continue
            case .namespace, .classBody: return false
            }
        }
        return false
    }
    func atStatementStart(_ k: Int) -> Bool {
        k == scopes[scopes.count - 1].statementStart || t.isPunct(k - 1, 59) || t.isPunct(k - 1, 123) || t.isPunct(k - 1, 125)
            || (k > 0 && inAttribute[k - 1])
    }
    /// `threadgroup T name...;`: a variable rather than a pointer or reference.
    func declaresThreadgroupVariable(_ k: Int) -> Bool {
        guard atStatementStart(k) else { return false }
        var e = k + 1, depth = 0
        while e < n {
            if depth == 0 && t.isPunct(e, 59) { return true }
            if t.isPunct(e, 40) || t.isPunct(e, 91) || t.isPunct(e, 123) {
                if depth == 0 && t.isPunct(e, 40) { return false }
                depth += 1
            } else if t.isPunct(e, 41) || t.isPunct(e, 93) || t.isPunct(e, 125) {
                depth -= 1
            } else if depth == 0 && (t.isPunct(e, 42) || t.isPunct(e, 38)) {
                return false
            }
            e += 1
        }
        return false
    }
    /// The closing '>' of template arguments opened at `open`, when it is plainly one.
    func closingAngle(_ open: Int) -> Int? {
        var depth = 0
        var i = open
        while i < n && i < open + 64 {
            if t.isPunct(i, 60) { depth += 1 } else if t.isPunct(i, 62) { depth -= 1; if depth == 0 { return i } }
            else if t.isPunct(i, 59) || t.isPunct(i, 123) || t.isPunct(i, 125) { return nil }
            i += 1
        }
        return nil
    }
    /// What may follow a function's parameter list before its body.
    func isFunctionTrailer(_ from: Int, _ to: Int, inClass: Bool) -> Bool {
        let words: Set<Substring> = ["const", "volatile", "override", "final", "mutable", "thread", "device", "constant",
                                     "threadgroup", "threadgroup_imageblock"]
        var i = from
        while i < to {
            if inAttribute[i] || t.isPunct(i, 38) { i += 1; continue }
            if t.isIdentifier(i) && words.contains(t.text(i)) { i += 1; continue }
            if (t.isWord(i, "__attribute__") || t.isWord(i, "noexcept")) && t.isPunct(i + 1, 40), let c = t.matching(i + 1, 40, 41) {
                i = c + 1
                continue
            }
            if t.isWord(i, "noexcept") { i += 1; continue }
            if t.isPunct(i, 45) && t.isPunct(i + 1, 62) { return true }             // trailing return type
            if inClass && t.isPunct(i, 58) && !t.isPunct(i + 1, 58) { return true }  // constructor initializers
            return false
        }
        return true
    }
    /// The name token and parameter parentheses of a function defined by the head a..<k, if it is one.
    func functionHead(_ a: Int, _ k: Int, inClass: Bool) -> (name: Int, open: Int, close: Int)? {
        let notDeclarators: Set<Substring> = ["__attribute__", "alignas", "decltype", "sizeof", "alignof", "static_assert",
                                              "noexcept", "if", "for", "while", "switch", "return"]
        var sawOperator: Int? = nil
        var i = a
        while i < k {
            if inAttribute[i] { i += 1; continue }
            if t.isWord(i, "operator") { sawOperator = i }
            if t.isPunct(i, 61) { return nil }
            if t.isWord(i, "template"), t.isPunct(i + 1, 60), let c = closingAngle(i + 1) { i = c + 1; continue }
            if t.isPunct(i, 40) {
                guard let close = t.matching(i, 40, 41), close < k else { return nil }
                if t.isWord(i - 1, "operator") { i = close + 1; continue }      // operator()
                if let op = sawOperator {
                    return isFunctionTrailer(close + 1, k, inClass: inClass) ? (op, i, close) : nil
                }
                if t.isIdentifier(i - 1) && !inAttribute[i - 1] && !notDeclarators.contains(t.text(i - 1)) {
                    return isFunctionTrailer(close + 1, k, inClass: inClass) ? (i - 1, i, close) : nil
                }
                i = close + 1
                continue
            }
            i += 1
        }
        return nil
    }
    /// Top-level comma-separated ranges of the tokens open+1..<close.
    func splitArguments(_ open: Int, _ close: Int, angles: Bool) -> [Range<Int>] {
        var out: [Range<Int>] = []
        var depth = 0
        var start = open + 1
        var i = open + 1
        while i < close {
            if t.isPunct(i, 40) || t.isPunct(i, 91) || t.isPunct(i, 123) || (angles && t.isPunct(i, 60)) { depth += 1 }
            else if t.isPunct(i, 41) || t.isPunct(i, 93) || t.isPunct(i, 125) || (angles && t.isPunct(i, 62)) { depth -= 1 }
            else if depth == 0 && t.isPunct(i, 44) { out.append(start..<i); start = i + 1 }
            i += 1
        }
        if start < close { out.append(start..<close) }
        return out
    }
    /// A parameter's plain type ("" when not a scalar or vector) and name.
    func parameter(_ r: Range<Int>) -> (type: String, name: String, hasDefault: Bool) {
        var end = r.upperBound
        var hasDefault = false
        for i in r where t.isPunct(i, 61) { end = i; hasDefault = true; break }
        var nameTok = end - 1
        if t.isPunct(nameTok, 93) {
            var j = nameTok
            while j > r.lowerBound && !t.isPunct(j, 91) { j -= 1 }
            nameTok = j - 1
        }
        guard nameTok >= r.lowerBound, t.isIdentifier(nameTok) else { return ("", "", hasDefault) }
        let qualifiers: Set<Substring> = ["const", "volatile", "thread", "device", "constant", "threadgroup", "coherent"]
        var words: [Substring] = []
        for i in r.lowerBound..<nameTok where t.isIdentifier(i) && !qualifiers.contains(t.text(i)) { words.append(t.text(i)) }
        let pointerOrReference = (r.lowerBound..<nameTok).contains { t.isPunct($0, 42) }
        let type = words.count == 1 && !pointerOrReference && valueTypeNames.contains(String(words[0])) ? String(words[0]) : ""
        return (type, String(t.text(nameTok)), hasDefault)
    }

    // Pass 1: structure, forbidden words and declarations.
    var k = 0
    while k < n {
        if inAttribute[k] { k += 1; continue }
        let top = scopes.count - 1
        if t.isIdentifier(k) {
            let word = t.text(k)
            if let message = forbiddenWords[String(word)], !(word == "delete" && t.isPunct(k - 1, 61)) {
                throw t.failure(at: k, message)
            }
            switch word {
            case "long" where t.isWord(k + 1, "long") || t.isWord(k + 1, "double"):
                throw t.failure(at: k, "'long \(t.text(k + 1))' is not supported in Metal (MSL §2.1); "
                    + (t.isWord(k + 1, "long") ? "long is already 64 bits" : "use float"))
            case "static" where inCode():
                throw t.failure(at: k, "static variables are not allowed in Metal functions (MSL §5.3); only program-scope "
                    + "constant data may be static")
            case "threadgroup":
                if inCode() {
                    if let f = enclosingFunction(), !functions[f].isKernel, declaresThreadgroupVariable(k) {
                        throw t.failure(at: k, "threadgroup variables can be declared only in kernel functions, not in "
                            + "'\(functions[f].name)' (MSL §4.4); declare it in the kernel and pass a threadgroup pointer")
                    }
                } else if case .namespace = scopes[top].kind, declaresThreadgroupVariable(k) {
                    throw t.failure(at: k, "program-scope variables must be in the constant address space (MSL §4.2); "
                        + "threadgroup variables can be declared only in kernel functions (MSL §4.4)")
                }
            case "coherent" where t.isPunct(k + 1, 40):
                // §4.8: `coherent(device)` qualifies device buffers, from MSL 3.2.
                guard t.isWord(k + 2, "device") && t.isPunct(k + 3, 41) else {
                    throw t.failure(at: k, "MSL has only the device scope of coherence: write coherent(device) (MSL §4.8)")
                }
                if languageVersion < 320 {
                    throw t.failure(at: k, "coherent(device) is supported from MSL 3.2 (MSL §4.8); this source is compiled as "
                        + "MSL \(versionText)")
                }
                var qualified = false
                var j = k - 1
                while j >= 0 && (t.isIdentifier(j) || t.isPunct(j, 58)) { if t.isWord(j, "device") { qualified = true }; j -= 1 }
                j = k + 4
                while j < n && (t.isIdentifier(j) || t.isPunct(j, 58) || t.isPunct(j, 60) || t.isPunct(j, 62)) {
                    if t.isWord(j, "device") { qualified = true }
                    j += 1
                }
                if !qualified {
                    throw t.failure(at: k, "coherent(device) qualifies buffers in the device address space only (MSL §4.8)")
                }
            case "main" where t.isPunct(k + 1, 40) && !inCode():
                if case .namespace = scopes[top].kind {
                    throw t.failure(at: k, "a function cannot be named main in Metal (MSL §1.5.4)")
                }
            case "struct", "class" where !t.isWord(k - 1, "enum") && t.isIdentifier(k + 1):
                var j = k + 2
                if t.isWord(j, "final") { j += 1 }
                if t.isPunct(j, 58) && !t.isPunct(j + 1, 58) {
                    throw t.failure(at: j, "derived classes are not allowed in Metal (MSL §1.5.4): '\(t.text(k + 1))' has a base class")
                }
            default: break
            }
        } else if t.isPunct(k, 91) {
            let p = k - 1
            let subscripted = p >= 0 && (toks[p].kind == .number || toks[p].kind == .literal || t.isPunct(p, 41) || t.isPunct(p, 93)
                || (t.isIdentifier(p) && !["return", "case", "else", "do"].contains(t.text(p))))
            if !subscripted, let close = t.matching(k, 91, 93) {
                if languageVersion < 320 {
                    throw t.failure(at: k, "lambda expressions are not supported before MSL 3.2 (MSL §1.5.4); this source is "
                        + "compiled as MSL \(versionText)")
                }
                lambdaIntroducers.insert(close)
            }
        } else if t.isPunct(k, 40) {
            // `(*name)(` and `(*)(`: a pointer to a function, declared or called through.
            var j = k + 1
            if t.isPunct(j, 42) {
                j += 1
                if t.isIdentifier(j) { j += 1 }
                if t.isPunct(j, 41) && t.isPunct(j + 1, 40) {
                    throw t.failure(at: k, "function pointers are not supported: Metal calls functions through pointers only as "
                        + "[[visible]] functions linked into the pipeline (MSL 2.3+, §1.5.4), and numba-metal's pipelines link none")
                }
            }
            scopes[top].parens += 1
            openParens.append(k)
        } else if t.isPunct(k, 41) {
            scopes[top].parens -= 1
            if let open = openParens.popLast() { openOf[k] = open }
        } else if t.isPunct(k, 59) {
            if scopes[top].parens <= 0 { scopes[top].statementStart = k + 1 }
        } else if t.isPunct(k, 123) {
            let head = scopes[top].statementStart
            var kind = BraceScope.initializer
            switch scopes[top].kind {
            case .namespace, .classBody:
                let inClass: Bool
                if case .classBody = scopes[top].kind { inClass = true } else { inClass = false }
                let headWords = Set((head..<k).filter { t.isIdentifier($0) && !inAttribute[$0] }.map { t.text($0) })
                if headWords.contains("namespace") || (t.isWord(head, "extern") && k > head + 1 && toks[head + 1].kind == .literal) {
                    kind = .namespace
                } else if headWords.contains("enum") {
                    kind = .initializer
                } else if let (name, open, close) = functionHead(head, k, inClass: inClass) {
                    var params: [(type: String, name: String)] = []
                    var required = 0
                    let ranges = splitArguments(open, close, angles: true)
                    if !(ranges.count == 1 && ranges[0].count == 1 && t.isWord(ranges[0].lowerBound, "void")) {
                        for r in ranges {
                            let p = parameter(r)
                            params.append((p.type, p.name))
                            if !p.hasDefault { required += 1 }
                        }
                    }
                    let isKernel = headWords.contains("kernel")
                        || attributes.contains { a in a.open >= head && a.close < k && (a.open + 2..<a.close - 1).contains { t.isWord($0, "kernel") } }
                    functions.append(MSLFunction(name: String(t.text(name)), nameToken: name, isKernel: isKernel, isMember: inClass,
                                                 bodyOpen: k, bodyClose: k, parameters: params, requiredParameters: required))
                    kind = .function(functions.count - 1)
                } else if headWords.contains("struct") || headWords.contains("class") || headWords.contains("union") {
                    kind = .classBody
                }
            case .function, .block, .lambda:
                let headWords = Set((head..<k).filter { t.isIdentifier($0) }.map { t.text($0) })
                if t.isPunct(k - 1, 41), let open = openOf[k - 1] {
                    kind = lambdaIntroducers.contains(open - 1) ? .lambda : .block
                } else if lambdaIntroducers.contains(k - 1) || t.isWord(k - 1, "mutable") {
                    kind = .lambda
                } else if headWords.contains("struct") || headWords.contains("class") || headWords.contains("union") {
                    kind = .classBody
                } else if t.isWord(k - 1, "else") || t.isWord(k - 1, "do") || t.isPunct(k - 1, 59) || t.isPunct(k - 1, 123)
                            || t.isPunct(k - 1, 125) || t.isPunct(k - 1, 58) || k == head {
                    kind = .block
                }
            case .initializer:
                kind = .initializer
            }
            scopes.append((kind, k + 1, 0))
        } else if t.isPunct(k, 125) {
            if scopes.count > 1 {
                if case .function(let f) = scopes[scopes.count - 1].kind { functions[f].bodyClose = k }
                scopes.removeLast()
            }
            scopes[scopes.count - 1].statementStart = k + 1
        }
        k += 1
    }

    // Pass 2: calls, functions used as values, and the call graph.
    var byName: [String: [Int]] = [:]
    for (i, f) in functions.enumerated() { byName[f.name, default: []].append(i) }
    var calls = [[(callee: Int, at: Int)]](repeating: [], count: functions.count)
    for (fi, f) in functions.enumerated() where f.bodyClose > f.bodyOpen {
        let parameterTypes = Dictionary(f.parameters.map { ($0.name, $0.type) }, uniquingKeysWith: { a, _ in a })
        var j = f.bodyOpen + 1
        while j < f.bodyClose {
            defer { j += 1 }
            guard t.isIdentifier(j), !inAttribute[j], let candidates = byName[String(t.text(j))] else { continue }
            let name = String(t.text(j))
            if t.isPunct(j - 1, 46) || (t.isPunct(j - 1, 62) && t.isPunct(j - 2, 45)) || (t.isPunct(j - 1, 58) && t.isPunct(j - 2, 58)) {
                continue   // a member (x.f, p->f) or a qualified name (ns::f)
            }
            if parameterTypes[name] != nil { continue }
            var open = j + 1
            if t.isPunct(open, 60), let c = closingAngle(open) { open = c + 1 }
            guard t.isPunct(open, 40), let close = t.matching(open, 40, 41) else {
                let isFree = candidates.contains { !functions[$0].isMember }
                let valueUse = t.isPunct(j - 1, 38) || t.isPunct(j - 1, 61) || t.isPunct(j - 1, 40) || t.isPunct(j - 1, 44)
                    || t.isWord(j - 1, "return")
                if isFree && valueUse && (t.isPunct(j + 1, 41) || t.isPunct(j + 1, 44) || t.isPunct(j + 1, 59)) {
                    throw t.failure(at: j, "function pointers are not supported: '\(name)' is used as a value; Metal calls functions "
                        + "through pointers only as [[visible]] functions linked into the pipeline (MSL 2.3+, §1.5.4), and "
                        + "numba-metal's pipelines link none")
                }
                continue
            }
            if candidates.allSatisfy({ functions[$0].isKernel }) {
                throw t.failure(at: j, "kernel function '\(name)' cannot be called: kernels are entry points that only the "
                    + "host dispatches (MSL §5.1)")
            }
            let args = splitArguments(open, close, angles: false)
            var matches = candidates.filter {
                !functions[$0].isKernel && args.count >= functions[$0].requiredParameters && args.count <= functions[$0].parameters.count
            }
            if matches.count > 1 {
                let guessed = args.map { guessType($0, t, parameterTypes) }
                let typed = matches.filter { c in
                    zip(guessed, functions[c].parameters).allSatisfy { g, p in g == nil || p.type.isEmpty || g! == p.type }
                }
                if !typed.isEmpty { matches = typed }
            }
            if matches.isEmpty { matches = candidates.filter { !functions[$0].isKernel } }
            for m in matches { calls[fi].append((m, j)) }
        }
    }

    // Pass 3: a cycle in the call graph is recursion.
    var state = [UInt8](repeating: 0, count: functions.count)   // 0 new, 1 on the path, 2 done
    var path: [Int] = []
    func visit(_ f: Int) throws {
        state[f] = 1
        path.append(f)
        for (callee, at) in calls[f] {
            if state[callee] == 1 {
                let cycle = path[path.firstIndex(of: callee)!...].map { functions[$0].name } + [functions[callee].name]
                throw t.failure(at: at, "recursion is not supported: \(cycle.joined(separator: " -> ")). MSL allows recursive calls "
                    + "only in compute functions from MSL 2.4 (§1.5.4) and only as deep as the pipeline's maxCallStackDepth, which "
                    + "numba-metal's pipelines leave at Metal's default of 1; write it as a loop")
            }
            if state[callee] == 0 { try visit(callee) }
        }
        path.removeLast()
        state[f] = 2
    }
    for f in functions.indices where state[f] == 0 { try visit(f) }
    return functions
}

/// The type of a call argument when the tokens show it: a literal, a conversion `T(x)`, `(T)x` or
/// `static_cast<T>(x)` to a scalar or vector type, or a parameter of the calling function.
private func guessType(_ r: Range<Int>, _ t: MSLText, _ parameterTypes: [String: String]) -> String? {
    guard !r.isEmpty else { return nil }
    let a = r.lowerBound, last = r.upperBound - 1
    if r.count == 1 {
        if t.toks[a].kind == .number {
            let lit = t.text(a).lowercased()
            let hex = lit.hasPrefix("0x")
            if lit.hasSuffix("h") && !hex { return "half" }
            if lit.contains(".") || (hex ? lit.contains("p") : lit.contains("e")) || (!hex && lit.hasSuffix("f")) { return "float" }
            if lit.hasSuffix("ul") || lit.hasSuffix("lu") { return "ulong" }
            if lit.hasSuffix("u") { return "uint" }
            if lit.hasSuffix("l") { return "long" }
            return "int"
        }
        if t.isIdentifier(a), let p = parameterTypes[String(t.text(a))], !p.isEmpty { return p }
        return nil
    }
    let first = String(t.text(a))
    if valueTypeNames.contains(first) && t.isPunct(a + 1, 40) && t.matching(a + 1, 40, 41) == last { return first }
    if t.isPunct(a, 40), a + 2 <= last, t.isIdentifier(a + 1), valueTypeNames.contains(String(t.text(a + 1))), t.isPunct(a + 2, 41) {
        return String(t.text(a + 1))
    }
    if first == "static_cast", t.isPunct(a + 1, 60), t.isIdentifier(a + 2), t.isPunct(a + 3, 62),
       valueTypeNames.contains(String(t.text(a + 2))) {
        return String(t.text(a + 2))
    }
    return nil
}

// MARK: - Glue

/// The C++ appended after the MSL: entry points that bind buffers, the argument block, dynamic
/// threadgroup memory and built-ins, and run work-items (a plain loop, or one work-item per call).
/// Bindings are hoisted into locals before the loops so that clang can keep them in registers (stores
/// through device pointers could otherwise alias the launch record) and vectorise simple kernels.
/// `argumentBlockBytes` (parameter position -> bytes the host packs) become static assertions, so an argument
/// struct whose size differs from what the host packs fails to compile.
func generateGlue(kernelName: String, analysis: KernelAnalysis, sourceLineCount: Int,
                  argumentBlockBytes: [Int: UInt32] = [:]) -> String {
    var binds: [String] = []
    var args: [String] = []
    for (i, p) in analysis.parameters.enumerated() {
        switch p.binding {
        case .buffer(let slot, let reference):
            if reference {
                binds.append("\(p.type.dropLast())* const __p\(i) = (\(p.type.dropLast())*)__L->buffers[\(slot)];")
                if let bytes = argumentBlockBytes[i] {
                    binds.append("static_assert(sizeof(*__p\(i)) == \(bytes)u, \"the argument struct of parameter '\(p.name)' is not the "
                        + "\(bytes) bytes the host packs\");")
                }
                args.append("*__p\(i)")
            } else {
                binds.append("\(p.type) const __p\(i) = (\(p.type))__L->buffers[\(slot)];")
                args.append("__p\(i)")
            }
        case .threadgroup(let slot):
            binds.append("\(p.type) const __p\(i) = (\(p.type))__tg[\(slot)];")
            args.append("__p\(i)")
        case .builtin(let name):
            args.append("__nm_bi<\(p.type)>(\(builtinInputs[name]!.expression))")
        }
    }
    let staticBytes = analysis.staticThreadgroupTypes.map { "((sizeof(\($0)) + 15ull) & ~15ull)" }
    let bindText = binds.map { "    " + $0 }.joined(separator: "\n")
    let call = "\(kernelName)(\(args.joined(separator: ",\n            ")));"
    return """

    #line 1 "nm_glue.cpp"
    #define __NM_LAUNCH_LOCALS \\
        const uint __G0 = __L->groups[0], __G1 = __L->groups[1], __G2 = __L->groups[2]; \\
        const uint __T0 = __L->threads[0], __T1 = __L->threads[1], __T2 = __L->threads[2]; \\
        (void)__G2; (void)__T2; (void)__tg;
    extern "C" {
    __attribute__((visibility("default"))) extern const unsigned int nm_kernel_abi_version = 1;
    __attribute__((visibility("default"))) extern const unsigned long long nm_kernel_static_tg_bytes = 0ull\(staticBytes.map { " + " + $0 }.joined());
    __attribute__((visibility("default"))) void nm_kernel_set_rt(const __nm_rt_api *rt) { __nm_rt = rt; }
    __attribute__((visibility("default"))) void nm_kernel_run_groups(const __nm_launch *__L, void *const *__tg, uint __first, uint __count) {
        __NM_LAUNCH_LOCALS
    \(bindText)
        for (uint __g = __first; __g < __first + __count; ++__g) {
            const uint __gx = __g % __G0, __gy = (__g / __G0) % __G1, __gz = __g / (__G0 * __G1);
            for (uint __lz = 0; __lz < __T2; ++__lz)
                for (uint __ly = 0; __ly < __T1; ++__ly)
                    for (uint __lx = 0; __lx < __T0; ++__lx) {
                        const uint __lin = (__lz * __T1 + __ly) * __T0 + __lx;
                        (void)__lin;
                        \(call)
                    }
        }
    }
    __attribute__((visibility("default"))) void nm_kernel_run_item(const __nm_launch *__L, void *const *__tg, uint __g, uint __lin) {
        __NM_LAUNCH_LOCALS
    \(bindText)
        const uint __gx = __g % __G0, __gy = (__g / __G0) % __G1, __gz = __g / (__G0 * __G1);
        const uint __lx = __lin % __T0, __ly = (__lin / __T0) % __T1, __lz = __lin / (__T0 * __T1);
        (void)__gx; (void)__gy; (void)__gz; (void)__lx; (void)__ly; (void)__lz;
        \(call)
    }
    }

    """
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
