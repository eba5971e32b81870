// Pipeline.swift -- a compiled kernel ready to dispatch.
import CPUEngine

/// A compiled compute kernel (Metal: MTLComputePipelineState; CPU: a loaded shared object).
class Pipeline {
    /// The device that compiled it.
    let device: Device
    /// The MSL kernel function name.
    let kernelName: String
    /// Limits and compile facts reported by nm_pipeline_get_info.
    let info: nm_pipeline_info

    /// Creates a pipeline description.
    init(device: Device, kernelName: String, info: nm_pipeline_info) {
        self.device = device
        self.kernelName = kernelName
        self.info = info
    }
}
