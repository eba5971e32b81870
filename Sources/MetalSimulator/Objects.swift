// Objects.swift -- what every simulated Metal object shares: live-object counting, Objective-C's
// autorelease pools (as Apple's `autoreleasepool(invoking:)`), validation failures and threads (Glibc
// only: no Foundation here).
// Built only where Metal does not exist: on a Mac the backend uses Apple's Metal itself.
#if !canImport(Metal)
#if canImport(Glibc)
import Glibc
#endif
import Locks

// MARK: - Locking and threads

/// Starts a detached thread running body.
func startThread(_ body: @escaping () -> Void) {
    final class Box { let body: () -> Void; init(_ b: @escaping () -> Void) { body = b } }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var attr = pthread_attr_t()
    pthread_attr_init(&attr)
    pthread_attr_setdetachstate(&attr, Int32(PTHREAD_CREATE_DETACHED))
    var thread = pthread_t()
    let rc = pthread_create(&thread, &attr, { p in
        let box = Unmanaged<Box>.fromOpaque(p!).takeRetainedValue()
        box.body()
        return nil
    }, box)
    pthread_attr_destroy(&attr)
    if rc != 0 { fatalError("MetalSimulator: could not start a thread (pthread_create returned \(rc))") }
}

// MARK: - Statistics and validation

/// Process-wide counters of the simulation.
enum SimulationCounters {
    /// Guards the counters.
    static let lock = Monitor()
    /// Simulated Metal objects alive.
    nonisolated(unsafe) static var liveObjects = 0
    /// Objects autoreleased on a thread with no pool in place (they live until the thread exits).
    nonisolated(unsafe) static var autoreleasedWithoutPool = 0
    /// Whether any simulated object was ever made: until then nothing can be autoreleased, and a pool costs
    /// nothing (the runtime's CPU device calls autoreleasepool on every entry point too).
    nonisolated(unsafe) static var inUse = false
}

/// Every simulated Metal object: counted while it is alive, as Instruments' allocation tracking would.
class SimObject {
    init() {
        SimulationCounters.lock.locked {
            SimulationCounters.liveObjects += 1
            SimulationCounters.inUse = true
        }
    }
    deinit { SimulationCounters.lock.locked { SimulationCounters.liveObjects -= 1 } }
}

/// Reports a use of the API that Metal's validation layer refuses: by default it stops the process as the
/// validation layer does ("failed assertion"), so that no misuse passes unnoticed.
func validationFailure(_ message: String) {
    if let handler = MetalSimulation.validationHandler {
        handler(message)
        return
    }
    fputs("MetalSimulator: failed assertion `\(message)'\n", stderr)
    abort()
}

// MARK: - Autorelease pools

/// The pools of one thread: the innermost last; objects autoreleased with none in place go to `leaked`,
/// which the thread keeps until it exits, as the Objective-C runtime does.
final class PoolStack {
    /// Open pools, innermost last.
    var pools: [[AnyObject]] = []
    /// Objects autoreleased with no pool in place.
    var leaked: [AnyObject] = []
}

/// The thread-local key of each thread's PoolStack (released when the thread exits).
private let poolKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key) { p in
        if let p { Unmanaged<PoolStack>.fromOpaque(p).release() }
    }
    return key
}()

/// The calling thread's pools.
private func currentPools() -> PoolStack {
    if let p = pthread_getspecific(poolKey) { return Unmanaged<PoolStack>.fromOpaque(p).takeUnretainedValue() }
    let stack = PoolStack()
    pthread_setspecific(poolKey, Unmanaged.passRetained(stack).toOpaque())
    return stack
}

/// Adds object to the innermost autorelease pool of the calling thread: what Objective-C does with an
/// object a method returns at +0 (commandBuffer, computeCommandEncoder, an atomic property's value).
func autorelease(_ object: AnyObject) {
    let stack = currentPools()
    if stack.pools.isEmpty {
        stack.leaked.append(object)
        SimulationCounters.lock.locked { SimulationCounters.autoreleasedWithoutPool += 1 }
    } else {
        stack.pools[stack.pools.count - 1].append(object)
    }
}

/// Runs body inside a new autorelease pool and releases what was autoreleased in it (Apple's
/// ObjectiveC.autoreleasepool(invoking:)).
public func autoreleasepool<Result>(invoking body: () throws -> Result) rethrows -> Result {
    if !SimulationCounters.inUse { return try body() }
    let stack = currentPools()
    stack.pools.append([])
    defer { stack.pools.removeLast() }
    return try body()
}
#endif
