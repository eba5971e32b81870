// KernelGlue.swift -- the C++ the CPU device appends after a kernel's MSL: entry points that bind its
// parameters and run its work-items.

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
    let siteCases = barrierSites(in: analysis.rewrittenSource)
        .map { "    case \($0.line)u: return \(cStringLiteral($0.location));" }.joined(separator: "\n")
    return """

    #line 1 "nm_glue.cpp"
    #define __NM_LAUNCH_LOCALS \\
        const uint __G0 = __L->groups[0], __G1 = __L->groups[1], __G2 = __L->groups[2]; \\
        const uint __T0 = __L->threads[0], __T1 = __L->threads[1], __T2 = __L->threads[2]; \\
        (void)__G2; (void)__T2; (void)__tg;
    extern "C" {
    __attribute__((visibility("default"))) extern const unsigned int nm_kernel_abi_version = 3;
    __attribute__((visibility("default"))) const char *nm_kernel_barrier_site(uint __line) {
        switch (__line) {
    \(siteCases)
        default: return nullptr;
        }
    }
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

// MARK: - Barrier sites

/// The Python locations of the source's `threadgroup_barrier` calls by MSL line (1-based), from the comment
/// numba-metal's compiler writes after each (`/* nm barrier at file.py:12 */`, msl.barrier_site).
func barrierSites(in source: String) -> [(line: Int, location: String)] {
    let prefix = Array("/* nm barrier at ".utf8), call = Array("threadgroup_barrier(".utf8)
    var sites: [(line: Int, location: String)] = []
    for (i, text) in source.utf8.split(separator: 10, omittingEmptySubsequences: false).enumerated() {
        let u = Array(text)
        guard firstIndex(of: call, in: u, from: 0) != nil, let p = firstIndex(of: prefix, in: u, from: 0),
              let end = firstIndex(of: Array(" */".utf8), in: u, from: p + prefix.count) else { continue }
        sites.append((i + 1, String(decoding: u[(p + prefix.count)..<end], as: UTF8.self)))
    }
    return sites
}

/// The first index at or after `from` where `needle` occurs in `haystack`.
private func firstIndex(of needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
    guard needle.count <= haystack.count else { return nil }
    var i = from
    while i + needle.count <= haystack.count {
        if haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
        i += 1
    }
    return nil
}

/// A C string literal holding text (quotes, backslashes and other than printable ASCII escaped in octal).
func cStringLiteral(_ text: String) -> String {
    var out = "\""
    for byte in text.utf8 {
        if byte >= 0x20 && byte < 0x7f && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
            out.unicodeScalars.append(UnicodeScalar(byte))
        } else {
            out += "\\" + String(byte >> 6) + String((byte >> 3) & 7) + String(byte & 7)
        }
    }
    return out + "\""
}
