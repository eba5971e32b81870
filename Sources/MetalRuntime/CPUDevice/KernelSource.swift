// KernelSource.swift -- reading MSL for the CPU device: find a kernel's signature and refuse what Metal
// refuses in it, have the whole source checked against what MSL forbids (checkMetalRules, MetalRules.swift),
// blank attribute lists (clang would misread [[threadgroup(0)]] through the address-space macro) and rewrite
// threadgroup variables declared in kernel bodies into per-threadgroup storage. KernelGlue.swift writes the
// C++ entry glue appended after the MSL. Line numbers of the MSL are kept intact.

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
        || simdgroupMatrixNames.contains(name)
}
/// SIMD-group matrices (§2.4, §6.7): their operations are collective too (not `simdgroup_index_in_threadgroup`,
/// a built-in input every numba-metal kernel declares).
private let simdgroupMatrixNames: Set<Substring> = ["simdgroup_matrix", "simdgroup_float8x8", "simdgroup_half8x8",
    "make_filled_simdgroup_matrix", "simdgroup_load", "simdgroup_store", "simdgroup_multiply",
    "simdgroup_multiply_accumulate"]

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
