/** The number box of a settings form that takes a whole number (the memory budget, the pack check interval):
 * what is typed is kept as typed, so the server's refusal of a bad value names the field and the box says so. */
import type { ReactNode } from "react";

export interface WholeNumberProps {
  value: string;
  onChange(value: string): void;
  invalid: boolean;
  min: number;
  max?: number;
  step?: number;
}

/** A `Field` child: the render function that takes the field's id and the id of what describes it. */
export function wholeNumberInput({ value, onChange, invalid, min, max, step }: WholeNumberProps) {
  return (id: string, describedBy: string | undefined): ReactNode => (
    <input
      id={id}
      type="number"
      min={min}
      max={max}
      step={step}
      inputMode="numeric"
      value={value}
      aria-describedby={describedBy}
      aria-invalid={invalid || undefined}
      onChange={(e) => onChange(e.target.value)}
    />
  );
}
