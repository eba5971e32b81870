// swift-tools-version:5.10
// 5.10, not less: the runtime and the simulated Metal API use `nonisolated(unsafe)` (SE-0412, Swift 5.10).
// The numba-metal runtime: one dynamic library with a C ABI (Sources/CPUEngine/include/numba_metal_runtime.h)
// behind which sit the Metal backend (macOS) and the CPU reference device (every OS).
import PackageDescription

let package = Package(
    name: "NumbaMetalRuntime",
    // macOS 13 has MSL 3.0 (float atomics) and every Metal API the backend uses without a guard;
    // numba_metal/tools/build.py checks each use of a newer one against this line.
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "NumbaMetalRuntime", type: .dynamic, targets: ["MetalRuntime"]),
    ],
    targets: [
        // C that Swift cannot express well: the CPU device's executor, fiber context switches, fault capture,
        // FP control; and the C ABI header the whole library implements.
        .target(
            name: "CPUEngine",
            cSettings: [.unsafeFlags(["-U_FORTIFY_SOURCE"])]
        ),
        // A mutex with a condition variable, for the runtime and the simulated Metal API alike.
        .target(name: "Locks"),
        // Where Metal does not exist: Apple's Metal declarations with Metal's documented behaviour, running
        // compute through an engine the runtime registers (the simulated Metal device).
        .target(name: "MetalSimulator", dependencies: ["Locks"]),
        // The runtime: the C ABI's entry points, the device-independent objects, the CPU reference device
        // and the Metal backend.
        .target(
            name: "MetalRuntime",
            dependencies: [
                "CPUEngine",
                "Locks",
                .target(name: "MetalSimulator", condition: .when(platforms: [.linux])),
            ],
            // The CPU device's Metal standard library: headers clang reads when it compiles a kernel, staged
            // beside the library (numba_metal/_lib/shim), not compiled into it.
            exclude: ["CPUDevice/shim"],
            // Threads the library starts (the CPU device's worker pool, a simulated GPU's queues) may still run
            // when the host unloads it at exit (cffi closes its libraries): never unmap its code.
            linkerSettings: [.unsafeFlags(["-Xlinker", "-z", "-Xlinker", "nodelete"], .when(platforms: [.linux]))]
        ),
        // The simulated Metal API's own rules (python -m pytest tests/runtime/test_simulator.py runs them).
        .testTarget(
            name: "MetalSimulatorTests",
            dependencies: ["MetalSimulator"],
            path: "tests/runtime/swift/MetalSimulatorTests"
        ),
    ],
    swiftLanguageVersions: [.v5]
)
