import Foundation
import IMCore
import IMMapping
import Testing

@Suite struct ShippedTablesTests {
    @Test func shippedTablesLoad() throws {
        let set = try MappingSet.load(overrides: nil)
        for vendor in MappingSet.vendors { #expect(!set.table(vendor).entries.isEmpty, "\(vendor) has entries") }
        #expect(Set(set.customTypes.keys).isSuperset(of: ["gif", "contact_card", "title_card", "order_card"]))
    }

}
