import municipalities from '../../data/municipalities.json' with { type: 'json' };
import departments from './departments.json' with { type: 'json' };

/**
 * DIVIPOLA names for addresses (generated data: municipalities by scripts/generate-codelists.mjs,
 * departments by scripts/generate-dian-places.mjs). The department is the municipality code's
 * first two digits.
 */
export interface DivipolaPlace {
  cityCode: string;
  cityName: string;
  departmentCode: string;
  departmentName: string;
}

const CITIES = municipalities as Record<string, string>;
const DEPARTMENTS = departments as Record<string, string>;

export function divipolaPlace(cityCode: string): DivipolaPlace | null {
  const cityName = CITIES[cityCode];
  const departmentCode = cityCode.slice(0, 2);
  const departmentName = DEPARTMENTS[departmentCode];
  if (!cityName || !departmentName) return null;
  return { cityCode, cityName, departmentCode, departmentName };
}
