public func MTLCopyAllDevices() -> [Int] { [] }
