// Renders a page for component tests the way the console does (only tests import this): inside
// the namespaces provider and a router at `path`, with the current location shown at any route
// the page links or navigates to.
import { render } from '@testing-library/react';
import type { ReactNode } from 'react';
import { MemoryRouter, Route, Routes, useLocation } from 'react-router';
import { NamespacesProvider } from '../namespaces';

/** Shows where the router is (so tests can see navigations). */
export function WhereAmI() {
  const location = useLocation();
  return <div data-testid="location">{location.pathname + location.search}</div>;
}

/** Renders the elements of `routes` (pattern → element) at `path`; other routes show WhereAmI. */
export function renderPage(path: string, routes: Record<string, ReactNode>) {
  return render(
    <NamespacesProvider user="alice">
      <MemoryRouter initialEntries={[path]}>
        <Routes>
          {Object.entries(routes).map(([pattern, element]) => (
            <Route key={pattern} path={pattern} element={element} />
          ))}
          <Route path="*" element={<WhereAmI />} />
        </Routes>
      </MemoryRouter>
    </NamespacesProvider>,
  );
}
