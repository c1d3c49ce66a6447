"""The full-VM backend: a desktop under QEMU from an imported qcow2, input through QMP, capture and exec through
the guest agent."""
