// KernelABI.swift -- a kernel's parameters as its compiler declared them through the C ABI
// (nm_kernel_abi). numba-metal's compiler lays out every kernel's parameters itself and hands that
// layout to the runtime; the runtime checks the MSL against it instead of trusting what it reads there.
import CPUEngine

/// The declared parameters of one kernel.
struct KernelABI {
    /// The parameters in declaration order, in the form the CPU device's MSL reader produces.
    let parameters: [KernelParameter]
    /// The packed size the host writes for each argument-block parameter, by parameter position.
    let argumentBlockBytes: [Int: UInt32]

    /// Reads and validates an nm_kernel_abi.
    init(_ abi: UnsafePointer<nm_kernel_abi>) throws {
        let a = abi.pointee
        if a.param_count > 0 && a.params == nil {
            throw RuntimeError.invalid("nm_pipeline_new: the kernel ABI has \(a.param_count) parameters but params is NULL")
        }
        var parameters: [KernelParameter] = []
        var sizes: [Int: UInt32] = [:]
        for i in 0..<Int(a.param_count) {
            let p = a.params![i]
            guard let type = p.type, let name = p.name else {
                throw RuntimeError.invalid("nm_pipeline_new: kernel ABI parameter \(i) has a NULL type or name")
            }
            let binding: KernelParameter.Binding
            switch Int32(p.kind) {
            case NM_PARAM_BUFFER: binding = .buffer(slot: Int(p.index), reference: false)
            case NM_PARAM_ARGUMENT_BLOCK:
                binding = .buffer(slot: Int(p.index), reference: true)
                sizes[i] = p.size
            case NM_PARAM_THREADGROUP: binding = .threadgroup(slot: Int(p.index))
            case NM_PARAM_BUILTIN:
                guard let b = p.builtin else {
                    throw RuntimeError.invalid("nm_pipeline_new: kernel ABI parameter \(i) is a built-in with a NULL attribute")
                }
                binding = .builtin(name: String(cString: b))
            default:
                throw RuntimeError.invalid("nm_pipeline_new: kernel ABI parameter \(i) has unknown kind \(p.kind)")
            }
            parameters.append(KernelParameter(name: String(cString: name), type: normalizedType(String(cString: type)),
                                              binding: binding))
        }
        self.parameters = parameters
        self.argumentBlockBytes = sizes
    }

    /// A stable text of the declaration, for cache keys.
    var key: String {
        parameters.enumerated().map { i, p in "\(p.name):\(p.type):\(p.binding):\(argumentBlockBytes[i] ?? 0)" }
            .joined(separator: ";")
    }

    /// Throws NM_ERR_COMPILE when the MSL's kernel signature is not the declared one.
    func check(against read: [KernelParameter], kernelName: String) throws {
        func describe(_ p: KernelParameter) -> String {
            switch p.binding {
            case .buffer(let slot, _): return "'\(p.type) \(p.name) [[buffer(\(slot))]]'"
            case .threadgroup(let slot): return "'\(p.type) \(p.name) [[threadgroup(\(slot))]]'"
            case .builtin(let name): return "'\(p.type) \(p.name) [[\(name)]]'"
            }
        }
        if read.count != parameters.count {
            throw RuntimeError.compile("kernel.metal: error: kernel '\(kernelName)' declares \(read.count) parameters in its MSL "
                + "but its compiler's ABI has \(parameters.count); the generated signature and the launch ABI disagree")
        }
        for (i, (r, d)) in zip(read, parameters).enumerated() where r != d {
            throw RuntimeError.compile("kernel.metal: error: parameter \(i) of kernel '\(kernelName)' is \(describe(r)) in the MSL "
                + "but \(describe(d)) in its compiler's ABI; the generated signature and the launch ABI disagree")
        }
    }
}

/// A C type spelt as the CPU device's MSL reader spells it: tokens separated by one space, with `*` and
/// `&` attached to what precedes them ("device float*", "constant nm_args&").
func normalizedType(_ type: String) -> String {
    var spaced = ""
    for c in type {
        if "*&<>,()[]".contains(c) { spaced += " \(c) " } else { spaced.append(c) }
    }
    return spaced.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).joined(separator: " ")
        .replacingAll(" *", with: "*").replacingAll(" &", with: "&")
}
