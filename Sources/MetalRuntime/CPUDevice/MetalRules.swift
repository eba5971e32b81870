// MetalRules.swift -- what MSL forbids and a header cannot express, checked over a whole MSL source for the
// CPU device (checkMetalRules): one pass over the tokens, then a call graph. Each refusal names its MSL section.

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
