// SimulatorTests.swift -- the simulated Metal API keeps the rules Apple documents, so that the Metal
// backend tested on it meets them too: the 64-command-buffer limit, completed handlers on another thread in
// order, encoder ordering, shared events, injected faults, autorelease pools, live-object counting.
// Run by tests/runtime/test_simulator.py (`swift test --filter MetalSimulatorTests`). Linux only: on a
// Mac there is no simulator, Metal itself is there.
#if !canImport(Metal)
#if canImport(Glibc)
import Glibc
#endif
import MetalSimulator
import XCTest

/// An engine whose kernels do nothing: these tests are about the API, not about computing.
final class NullEngine: MetalSimulation.ComputeEngine {
    func compileLibrary(source: String, request: MetalSimulation.CompileRequest) throws -> [String] {
        if source.contains("syntax error") { throw MetalSimulation.CompileFailure(log: "program_source:1:1: error: syntax error") }
        return ["k"]
    }
    func makeKernel(source: String, name: String, request: MetalSimulation.CompileRequest) throws -> MetalSimulation.Kernel {
        MetalSimulation.Kernel(handle: self, maxTotalThreadsPerThreadgroup: 1024, staticThreadgroupMemoryLength: 0,
                               bufferIndices: [0], threadgroupIndices: [])
    }
    func run(_ kernel: MetalSimulation.Kernel, _ dispatch: MetalSimulation.Dispatch) -> String? { nil }
}

/// Collects validation failures instead of stopping the process.
final class Violations: @unchecked Sendable {
    private let lock = NSLockish()
    private var messages: [String] = []
    func record(_ m: String) { lock.run { messages.append(m) } }
    func take() -> [String] { lock.run { let m = messages; messages = []; return m } }
}

/// A minimal mutex (XCTest brings Foundation, but the module under test must not need it).
final class NSLockish: @unchecked Sendable {
    private var m = pthread_mutex_t()
    init() { pthread_mutex_init(&m, nil) }
    func run<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(&m)
        defer { pthread_mutex_unlock(&m) }
        return body()
    }
}

final class SimulatorTests: XCTestCase {
    var device: (any MTLDevice)!
    let violations = Violations()

    override func setUp() {
        device = MetalSimulation.makeDevice(profile: .apple9, engine: NullEngine())
        let v = violations
        MetalSimulation.validationHandler = { v.record($0) }
    }

    override func tearDown() {
        MetalSimulation.validationHandler = nil
        device = nil
    }

    private func pipeline() throws -> any MTLComputePipelineState {
        let library = try device.makeLibrary(source: "kernel void k(device int* x [[buffer(0)]]) {}", options: nil)
        return try device.makeComputePipelineState(function: library.makeFunction(name: "k")!)
    }

    /// Waits (up to 10 s) for a condition another thread makes true.
    private func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<1000 {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    func testMakeCommandBufferBlocksAtTheQueuesLimitUntilOneCompletes() throws {
        let queue = device.makeCommandQueue()!
        var held: [any MTLCommandBuffer] = []
        autoreleasepool {
            for _ in 0..<64 { held.append(queue.makeCommandBuffer()!) }
        }
        XCTAssertEqual(MetalSimulation.statistics(of: device).uncompletedCommandBuffers, 64)
        let got = Flag()
        Thread.detach { autoreleasepool { _ = queue.makeCommandBuffer(); got.set() } }
        usleep(200_000)
        XCTAssertFalse(got.value, "a 65th command buffer must block while 64 are uncompleted")
        held[0].commit()
        XCTAssertTrue(eventually { got.value }, "completing one frees its slot")
        for cb in held.dropFirst() { cb.commit() }
        held.last!.waitUntilCompleted()
    }

    func testCompletedHandlersRunOnAnotherThreadInOrder() throws {
        let queue = device.makeCommandQueue()!
        let order = Violations()
        let caller = pthread_self()
        var last: (any MTLCommandBuffer)? = nil
        for i in 0..<5 {
            autoreleasepool {
                let cb = queue.makeCommandBuffer()!
                cb.addCompletedHandler { _ in
                    order.record(pthread_equal(pthread_self(), caller) != 0 ? "caller" : "\(i)")
                }
                cb.addCompletedHandler { _ in order.record("\(i)b") }
                cb.commit()
                last = cb
            }
        }
        last!.waitUntilCompleted()
        XCTAssertEqual(order.take(), ["0", "0b", "1", "1b", "2", "2b", "3", "3b", "4", "4b"])
        XCTAssertEqual(last!.status, .completed)
    }

    func testEncoderOrderingRulesAreAsserted() throws {
        let queue = device.makeCommandQueue()!
        let event = device.makeSharedEvent()!
        autoreleasepool {
            let cb = queue.makeCommandBuffer()!
            let compute = cb.makeComputeCommandEncoder()!
            XCTAssertNil(cb.makeBlitCommandEncoder())
            cb.encodeSignalEvent(event, value: 1)
            cb.encodeWaitForEvent(event, value: 1)
            cb.commit()
            XCTAssertEqual(violations.take().count, 4, "a second encoder, signal, wait and commit need endEncoding first")
            compute.endEncoding()
            compute.endEncoding()
            XCTAssertEqual(violations.take().count, 1, "endEncoding twice")
            cb.commit()
            cb.addCompletedHandler { _ in }
            cb.commit()
            XCTAssertEqual(violations.take().count, 2, "a handler after commit, a second commit")
            cb.waitUntilCompleted()
        }
        autoreleasepool {
            let cb = queue.makeCommandBuffer()!
            _ = cb.makeComputeCommandEncoder()!
        }
        XCTAssertTrue(violations.take().contains { $0.contains("released without endEncoding") })
    }

    func testDispatchArgumentsAreValidated() throws {
        let queue = device.makeCommandQueue()!
        let state = try pipeline()
        let buffer = device.makeBuffer(length: 64, options: .storageModeShared)!
        var bytes = [UInt8](repeating: 0, count: 5000)
        autoreleasepool {
            let cb = queue.makeCommandBuffer()!
            let e = cb.makeComputeCommandEncoder()!
            e.setComputePipelineState(state)
            e.dispatchThreadgroups(MTLSize(width: 1, height: 1, depth: 1), threadsPerThreadgroup: MTLSize(width: 1, height: 1, depth: 1))
            XCTAssertTrue(violations.take().first?.contains("[[buffer(0)]]") == true, "a declared buffer left unbound")
            e.setBuffer(buffer, offset: 0, index: 0)
            e.setBytes(&bytes, length: 5000, index: 1)
            e.setThreadgroupMemoryLength(8, index: 0)
            e.dispatchThreadgroups(MTLSize(width: 1, height: 1, depth: 1), threadsPerThreadgroup: MTLSize(width: 1025, height: 1, depth: 1))
            XCTAssertEqual(violations.take().count, 3, "setBytes over 4 KB, a threadgroup length not a multiple of 16, too many threads")
            e.dispatchThreadgroups(MTLSize(width: 1, height: 1, depth: 1), threadsPerThreadgroup: MTLSize(width: 32, height: 1, depth: 1))
            e.endEncoding()
            cb.commit()
            cb.waitUntilCompleted()
            XCTAssertEqual(cb.status, .completed)
        }
        XCTAssertEqual(violations.take(), [])
    }

    func testSharedEventValuesOnlyGrowAndReleaseWaiters() throws {
        let queue = device.makeCommandQueue()!
        let event = device.makeSharedEvent()!
        event.signaledValue = 5
        event.signaledValue = 3
        XCTAssertEqual(event.signaledValue, 5, "Apple: the value changes only to a larger one")
        var waiting: (any MTLCommandBuffer)!
        autoreleasepool {
            waiting = queue.makeCommandBuffer()!
            waiting.encodeWaitForEvent(event, value: 7)
            waiting.commit()
        }
        usleep(100_000)
        XCTAssertNotEqual(waiting.status, .completed)
        event.signaledValue = 7
        waiting.waitUntilCompleted()
        XCTAssertEqual(waiting.status, .completed)
    }

    func testAFaultedCommandBufferNeverRunsItsSignal() throws {
        for (fault, code) in [(MetalSimulation.Fault.pageFault, MTLCommandBufferError.Code.pageFault), (.watchdog, .timeout)] {
            let queue = device.makeCommandQueue()!
            let event = device.makeSharedEvent()!
            MetalSimulation.inject(fault, into: device)
            var cb: (any MTLCommandBuffer)!
            autoreleasepool {
                cb = queue.makeCommandBuffer()!
                cb.encodeSignalEvent(event, value: 1)
                cb.commit()
                cb.waitUntilCompleted()
                XCTAssertEqual(cb.status, .error)
                XCTAssertEqual((cb.error as? MTLCommandBufferError)?.code, code)
            }
            XCTAssertEqual(event.signaledValue, 0, "the encoded signal of a failed command buffer must not run")
        }
    }

    func testAWaitThatOutlivesTheWatchdogFails() throws {
        var profile = MetalSimulation.Profile.apple9
        profile.eventWaitTimeout = 0.2
        let gpu = MetalSimulation.makeDevice(profile: profile, engine: NullEngine())
        let queue = gpu.makeCommandQueue()!
        let event = gpu.makeSharedEvent()!
        autoreleasepool {
            let cb = queue.makeCommandBuffer()!
            cb.encodeWaitForEvent(event, value: 1)
            cb.commit()
            cb.waitUntilCompleted()
            XCTAssertEqual((cb.error as? MTLCommandBufferError)?.code, .timeout)
        }
    }

    func testAutoreleasedObjectsLiveUntilTheirPoolDrains() throws {
        let queue = device.makeCommandQueue()!
        let base = MetalSimulation.statistics(of: device)
        autoreleasepool {
            for _ in 0..<10 { _ = queue.makeCommandBuffer() }
            XCTAssertEqual(MetalSimulation.statistics(of: device).liveObjects, base.liveObjects + 10, "the pool keeps them")
        }
        XCTAssertEqual(MetalSimulation.statistics(of: device).liveObjects, base.liveObjects, "draining the pool frees them")
        let leaked = Flag()
        Thread.detach {
            _ = queue.makeCommandBuffer()  // no pool on this thread: it stays until the thread exits
            leaked.set()
        }
        XCTAssertTrue(eventually { leaked.value })
        XCTAssertEqual(MetalSimulation.statistics(of: device).autoreleasedWithoutPool, base.autoreleasedWithoutPool + 1)
    }

    func testCompileErrorsComeFromMakeLibrary() {
        XCTAssertThrowsError(try device.makeLibrary(source: "syntax error", options: nil)) { error in
            XCTAssertTrue("\(error)".contains("program_source:1:1"))
        }
    }
}

/// A flag set by another thread.
final class Flag: @unchecked Sendable {
    private let lock = NSLockish()
    private var set_ = false
    func set() { lock.run { set_ = true } }
    var value: Bool { lock.run { set_ } }
}

/// Detached threads without Foundation.
enum Thread {
    static func detach(_ body: @escaping () -> Void) {
        final class Box { let body: () -> Void; init(_ b: @escaping () -> Void) { body = b } }
        var t = pthread_t()
        _ = pthread_create(&t, nil, { p in
            Unmanaged<Box>.fromOpaque(p!).takeRetainedValue().body()
            return nil
        }, Unmanaged.passRetained(Box(body)).toOpaque())
        pthread_detach(t)
    }
}
#endif
