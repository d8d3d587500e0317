// A version number that bumps at most once per `ms` however often `bump` is called, so a burst of
// live events (Velero reports progress several times a second) causes one re-read, not dozens.
import { useCallback, useEffect, useRef, useState } from 'react';

export function useCoalescedVersion(ms: number): [number, () => void] {
  const [version, setVersion] = useState(0);
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const bump = useCallback(() => {
    if (timer.current) return;
    timer.current = setTimeout(() => {
      timer.current = null;
      setVersion((v) => v + 1);
    }, ms);
  }, [ms]);
  useEffect(
    () => () => {
      if (timer.current) clearTimeout(timer.current);
    },
    [],
  );
  return [version, bump];
}
