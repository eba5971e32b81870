// Pipeline.swift -- a compiled kernel ready to dispatch, and what its signature declares.
import CPUEngine

/// A compiled compute kernel (Metal: MTLComputePipelineState; CPU: a loaded shared object).
protocol Pipeline: AnyObject {
    /// The device that compiled it.
    var device: any Device { get }
    /// The MSL kernel function name.
    var kernelName: String { get }
    /// Limits and compile facts reported by nm_pipeline_get_info.
    var info: nm_pipeline_info { get }
    /// The buffer and threadgroup-memory slots its signature declares.
    var bindings: KernelBindings { get }
}

/// The slots a kernel's signature declares: every dispatch must bind each declared [[buffer(i)]], and each
/// declared [[threadgroup(i)]] gets memory even when the launch asks for none.
struct KernelBindings {
    /// Bit i set when the kernel declares [[buffer(i)]].
    let bufferSlots: UInt32
    /// Bit i set when the kernel declares [[threadgroup(i)]].
    let threadgroupSlots: UInt32
    /// Parameter names by buffer slot, for messages.
    private let bufferNames: [Int: String]

    /// The bindings of a parameter list (the compiler's ABI, or what the MSL reader found).
    init(_ parameters: [KernelParameter]) {
        var buffers: UInt32 = 0, threadgroups: UInt32 = 0
        var names: [Int: String] = [:]
        for p in parameters {
            switch p.binding {
            case .buffer(let slot, _):
                buffers |= 1 << UInt32(slot)
                names[slot] = p.name
            case .threadgroup(let slot): threadgroups |= 1 << UInt32(slot)
            case .builtin: break
            }
        }
        bufferSlots = buffers
        threadgroupSlots = threadgroups
        bufferNames = names
    }

    /// The parameter bound at [[buffer(slot)]].
    func bufferName(_ slot: Int) -> String { bufferNames[slot] ?? "?" }
}

/// The math mode of compile options (one of NM_MATH_*), or NM_ERR_INVALID_ARGUMENT.
func requestedMathMode(_ options: nm_compile_options) throws -> Int32 {
    let mode = Int32(bitPattern: options.fast_math)
    guard mode == NM_MATH_SAFE || mode == NM_MATH_RELAXED || mode == NM_MATH_FAST else {
        throw RuntimeError.invalid("nm_pipeline_new: fast_math is \(options.fast_math), not a math mode (NM_MATH_SAFE 0, "
            + "NM_MATH_RELAXED 1 or NM_MATH_FAST 2)")
    }
    return mode
}
