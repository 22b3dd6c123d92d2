// Numbers as people read them in English text, without ICU: toLocaleString's first use costs a command's start
// about 10 ms, and every command builds texts with numbers in them.

/** 1234567 -> "1,234,567" (integers; a fraction is kept as it is). */
export function groupDigits(n: number): string {
  const [whole, fraction] = String(n).split(".");
  const grouped = (whole as string).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return fraction === undefined ? grouped : `${grouped}.${fraction}`;
}
