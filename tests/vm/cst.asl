/*
 * cst.asl: SSDT giving every QEMU vCPU (\_SB.CPUS.C000 .. C03F, the names QEMU's
 * DSDT uses: "C%03X") a _CST with two C-states, so the guest runs the acpi_idle
 * cpuidle driver with POLL, C1 and C2 (see shared/kernel-notes.md section 8):
 *   C1: SystemIO register, type 1 -> Linux enters it with HLT (port 0x813 never read)
 *   C2: SystemIO port 0x814 (unused by QEMU: the read returns at once), type 2,
 *       latency 10 us, power 500 mW. Without ARAT (-cpu max,-arat) the LAPIC timer
 *       stops in C2, so every C2 entry/exit goes through the tick broadcast code.
 * QEMU's FADT disables C2/C3 and its DSDT has no _CST, hence this table.
 * Each CPU's Scope is guarded with CondRefOf, so one table serves any -smp up to 64.
 * Compiled at run time by boot.sh --cst (iasl into the cache dir); loaded with
 * qemu -acpitable file=cst.aml. Regenerate the per-CPU blocks with:
 *   for i in $(seq 0 63); do printf 'C%03X\n' $i; done
 */
DefinitionBlock ("", "SSDT", 2, "SCHEDH", "CSTTABLE", 0x00000001)
{
    Name (\_SB.SHCS, Package (0x03)
    {
        0x02,
        Package (0x04)
        {
            ResourceTemplate () { Register (SystemIO, 0x08, 0x00, 0x0000000000000813, ,) },
            0x01,       /* type C1 */
            0x0001,     /* latency us */
            0x03E8      /* power mW */
        },
        Package (0x04)
        {
            ResourceTemplate () { Register (SystemIO, 0x08, 0x00, 0x0000000000000814, ,) },
            0x02,       /* type C2 */
            0x000A,     /* latency 10 us */
            0x01F4      /* power 500 mW */
        }
    })

    External (\_SB.CPUS.C000, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C000))
    {
        Scope (\_SB.CPUS.C000) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C001, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C001))
    {
        Scope (\_SB.CPUS.C001) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C002, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C002))
    {
        Scope (\_SB.CPUS.C002) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C003, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C003))
    {
        Scope (\_SB.CPUS.C003) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C004, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C004))
    {
        Scope (\_SB.CPUS.C004) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C005, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C005))
    {
        Scope (\_SB.CPUS.C005) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C006, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C006))
    {
        Scope (\_SB.CPUS.C006) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C007, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C007))
    {
        Scope (\_SB.CPUS.C007) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C008, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C008))
    {
        Scope (\_SB.CPUS.C008) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C009, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C009))
    {
        Scope (\_SB.CPUS.C009) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C00A, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C00A))
    {
        Scope (\_SB.CPUS.C00A) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C00B, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C00B))
    {
        Scope (\_SB.CPUS.C00B) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C00C, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C00C))
    {
        Scope (\_SB.CPUS.C00C) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C00D, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C00D))
    {
        Scope (\_SB.CPUS.C00D) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C00E, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C00E))
    {
        Scope (\_SB.CPUS.C00E) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C00F, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C00F))
    {
        Scope (\_SB.CPUS.C00F) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C010, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C010))
    {
        Scope (\_SB.CPUS.C010) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C011, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C011))
    {
        Scope (\_SB.CPUS.C011) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C012, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C012))
    {
        Scope (\_SB.CPUS.C012) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C013, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C013))
    {
        Scope (\_SB.CPUS.C013) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C014, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C014))
    {
        Scope (\_SB.CPUS.C014) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C015, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C015))
    {
        Scope (\_SB.CPUS.C015) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C016, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C016))
    {
        Scope (\_SB.CPUS.C016) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C017, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C017))
    {
        Scope (\_SB.CPUS.C017) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C018, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C018))
    {
        Scope (\_SB.CPUS.C018) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C019, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C019))
    {
        Scope (\_SB.CPUS.C019) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C01A, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C01A))
    {
        Scope (\_SB.CPUS.C01A) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C01B, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C01B))
    {
        Scope (\_SB.CPUS.C01B) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C01C, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C01C))
    {
        Scope (\_SB.CPUS.C01C) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C01D, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C01D))
    {
        Scope (\_SB.CPUS.C01D) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C01E, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C01E))
    {
        Scope (\_SB.CPUS.C01E) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C01F, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C01F))
    {
        Scope (\_SB.CPUS.C01F) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C020, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C020))
    {
        Scope (\_SB.CPUS.C020) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C021, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C021))
    {
        Scope (\_SB.CPUS.C021) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C022, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C022))
    {
        Scope (\_SB.CPUS.C022) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C023, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C023))
    {
        Scope (\_SB.CPUS.C023) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C024, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C024))
    {
        Scope (\_SB.CPUS.C024) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C025, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C025))
    {
        Scope (\_SB.CPUS.C025) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C026, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C026))
    {
        Scope (\_SB.CPUS.C026) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C027, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C027))
    {
        Scope (\_SB.CPUS.C027) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C028, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C028))
    {
        Scope (\_SB.CPUS.C028) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C029, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C029))
    {
        Scope (\_SB.CPUS.C029) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C02A, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C02A))
    {
        Scope (\_SB.CPUS.C02A) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C02B, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C02B))
    {
        Scope (\_SB.CPUS.C02B) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C02C, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C02C))
    {
        Scope (\_SB.CPUS.C02C) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C02D, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C02D))
    {
        Scope (\_SB.CPUS.C02D) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C02E, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C02E))
    {
        Scope (\_SB.CPUS.C02E) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C02F, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C02F))
    {
        Scope (\_SB.CPUS.C02F) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C030, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C030))
    {
        Scope (\_SB.CPUS.C030) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C031, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C031))
    {
        Scope (\_SB.CPUS.C031) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C032, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C032))
    {
        Scope (\_SB.CPUS.C032) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C033, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C033))
    {
        Scope (\_SB.CPUS.C033) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C034, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C034))
    {
        Scope (\_SB.CPUS.C034) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C035, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C035))
    {
        Scope (\_SB.CPUS.C035) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C036, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C036))
    {
        Scope (\_SB.CPUS.C036) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C037, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C037))
    {
        Scope (\_SB.CPUS.C037) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C038, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C038))
    {
        Scope (\_SB.CPUS.C038) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C039, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C039))
    {
        Scope (\_SB.CPUS.C039) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C03A, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C03A))
    {
        Scope (\_SB.CPUS.C03A) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C03B, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C03B))
    {
        Scope (\_SB.CPUS.C03B) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C03C, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C03C))
    {
        Scope (\_SB.CPUS.C03C) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C03D, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C03D))
    {
        Scope (\_SB.CPUS.C03D) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C03E, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C03E))
    {
        Scope (\_SB.CPUS.C03E) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
    External (\_SB.CPUS.C03F, ProcessorObj)
    If (CondRefOf (\_SB.CPUS.C03F))
    {
        Scope (\_SB.CPUS.C03F) { Method (_CST, 0, NotSerialized) { Return (\_SB.SHCS) } }
    }
}
