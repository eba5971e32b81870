// swift-tools-version:5.9
// The numba-metal runtime: one dynamic library with a C ABI (Sources/CNumbaMetal/include/numba_metal_runtime.h)
// behind which sit the Metal backend (macOS) and the CPU reference device (every OS).
import PackageDescription

let package = Package(
    name: "NumbaMetalRuntime",
    products: [
        .library(name: "NumbaMetalRuntime", type: .dynamic, targets: ["NumbaMetalRuntime"]),
    ],
    targets: [
        // C that Swift cannot express well: fiber context switches, fault capture, FP control, the CPU executor.
        .target(
            name: "CNumbaMetal",
            cSettings: [.unsafeFlags(["-U_FORTIFY_SOURCE"])]
        ),
        // Apple's Metal declarations, mirrored so the Metal backend type-checks where Metal does not exist.
        .target(name: "MetalStub"),
        .target(
            name: "NumbaMetalRuntime",
            dependencies: [
                "CNumbaMetal",
                .target(name: "MetalStub", condition: .when(platforms: [.linux])),
            ]
        ),
    ],
    swiftLanguageVersions: [.v5]
)
