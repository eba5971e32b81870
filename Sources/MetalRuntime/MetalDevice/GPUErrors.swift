// GPUErrors.swift -- what a failed command buffer's error means: its raw code (on a Mac
// `(error as NSError).code`, which may be a code MTLCommandBufferError.Code has no case for, such as 14),
// whether the GPU now refuses this process (the device is lost: every later call fails with one message),
// and, for a command buffer made with errorOptions .encoderExecutionStatus, the kernels Metal names as
// faulting (each dispatch runs inside a debug group named after its kernel).
#if canImport(Metal)
import Metal
import Foundation
#else
import MetalSimulator
#endif

/// One MTLCommandBufferError code: its name, what it means for the user, and whether the GPU refuses
/// further work from this process after it.
struct GPUErrorKind {
    let code: Int
    let name: String
    let meaning: String
    let deviceLost: Bool

    /// Every code numba-metal tells apart (Apple's MTLCommandBufferError.Code, plus 14, which Metal reports
    /// as kIOGPUCommandBufferCallbackErrorImpactingInteractivity and Swift's enum cannot hold).
    static let table: [GPUErrorKind] = [
        GPUErrorKind(code: 1, name: "internal", meaning: "an internal GPU error", deviceLost: false),
        GPUErrorKind(code: 2, name: "timeout", meaning: "macOS's GPU watchdog ended the command buffer: it ran too long, or "
            + "waited too long for another stream's work; the OS sets that limit and numba-metal cannot raise it: split the "
            + "work into shorter launches", deviceLost: false),
        GPUErrorKind(code: 3, name: "pageFault", meaning: "a GPU page fault: a memory access outside the kernel's buffers "
            + "(compile with debug=True to check array bounds)", deviceLost: false),
        GPUErrorKind(code: 4, name: "accessRevoked", meaning: "macOS revoked this process's access to the GPU after too many "
            + "GPU errors, timeouts or hangs", deviceLost: true),
        GPUErrorKind(code: 7, name: "notPermitted", meaning: "this process is not permitted to use the GPU", deviceLost: true),
        GPUErrorKind(code: 8, name: "outOfMemory", meaning: "the GPU had not enough memory for the command buffer", deviceLost: false),
        GPUErrorKind(code: 9, name: "invalidResource", meaning: "a buffer was released before the GPU used it", deviceLost: false),
        GPUErrorKind(code: 10, name: "memoryless", meaning: "a memoryless-attachment limit", deviceLost: false),
        GPUErrorKind(code: 11, name: "deviceRemoved", meaning: "the GPU was removed", deviceLost: true),
        GPUErrorKind(code: 12, name: "stackOverflow", meaning: "a GPU call-stack overflow", deviceLost: false),
        GPUErrorKind(code: 14, name: "ImpactingInteractivity", meaning: "macOS's GPU watchdog ended the command buffer because "
            + "it kept the display from responding", deviceLost: true),
    ]

    /// The kind of a raw code (an unnamed one is reported with its number and does not lose the device).
    static func of(_ code: Int) -> GPUErrorKind {
        table.first { $0.code == code } ?? GPUErrorKind(code: code, name: "code \(code)", meaning: "a GPU error Metal does not name",
                                                       deviceLost: false)
    }
}

/// The raw code of a command buffer's error: NSError.code on a Mac (never the Swift enum, which has no case
/// for some codes Metal reports).
func commandBufferErrorCode(_ error: any Error) -> Int {
    #if canImport(Metal)
    return (error as NSError).code
    #else
    return (error as? MTLCommandBufferError)?.errorCode ?? 1
    #endif
}

/// The kernels Metal names in a failed command buffer's error: the debug groups of the encoders whose
/// errorState is .faulted (present only when the command buffer recorded .encoderExecutionStatus).
func faultingKernels(_ error: any Error) -> [String] {
    #if canImport(Metal)
    let info = (error as NSError).userInfo[MTLCommandBufferEncoderInfoErrorKey]
    #else
    let info = (error as? MTLCommandBufferError)?.userInfo[MTLCommandBufferEncoderInfoErrorKey]
    #endif
    guard let encoders = info as? [any MTLCommandBufferEncoderInfo] else { return [] }
    var names: [String] = []
    for e in encoders where e.errorState == .faulted {
        for s in e.debugSignposts where !names.contains(s) { names.append(s) }
    }
    return names
}

/// The one message of a lost device: what Metal answered, after which kernel, and to restart the process.
func deviceLostMessage(_ kind: GPUErrorKind, kernel: String, detail: String) -> String {
    "the GPU refused further work from this process: \(kind.meaning) (MTLCommandBufferError \(kind.name), code \(kind.code), "
        + "answered to the command buffer of kernel '\(kernel)': \(detail)). Every later launch, wait, copy or allocation "
        + "on this device fails with this message; restart the Python process to use the GPU again"
}
